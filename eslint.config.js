// Flat config: typescript-eslint's type-aware recommended rules over everything we ship and test;
// prettier owns the layout (`npm run lint` runs `prettier --check` after eslint).
import js from '@eslint/js'
import prettier from 'eslint-config-prettier'
import globals from 'globals'
import tseslint from 'typescript-eslint'

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/', 'helm/', 'eslint.config.js', 'scripts/*.mjs'] },
  js.configs.recommended,
  {
    files: ['**/*.ts'],
    extends: [...tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  {
    // A module a newcomer reads in one go (docs/development.md, "Layout"): at most 400 formatted lines, and
    // functions of at most 80 (blank lines and comments aside). The exceptions say why where they stand.
    files: ['src/**/*.ts'],
    rules: {
      'max-lines': ['error', { max: 400, skipBlankLines: false, skipComments: false }],
      'max-lines-per-function': ['error', { max: 80, skipBlankLines: true, skipComments: true, IIFEs: true }],
    },
  },
  {
    // The status page's script runs in the browser as it is (src/admin/page/script.ts serves it).
    files: ['src/admin/page/*.js'],
    languageOptions: { sourceType: 'script', ecmaVersion: 2020, globals: globals.browser },
  },
  prettier,
)
