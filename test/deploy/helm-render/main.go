// A stand-in for `helm template`, for machines without the helm binary: Go's text/template with
// sprig (the same engine and function library Helm uses) plus Helm's own functions (include, tpl,
// required, toYaml, fromYaml, toJson, fromJson) and its render rules (partials `_*.tpl` are not
// rendered, "<no value>" becomes "", empty manifests are dropped). Like Helm 3 it first validates
// the merged values against the chart's values.schema.json with gojsonschema (the library Helm 3
// used for it up to 3.17), so a typo or a wrong type stops the render with Helm's message. It does
// not check the manifests against Kubernetes schemas (test/deploy does, with kubernetes-models);
// `helm lint`/`helm template` remain the reference.
//
// Built by test/deploy/chart-render.test.ts from Debian's packages, offline, in GOPATH mode:
//
//	GO111MODULE=off GOPATH=/usr/share/gocode go build -o /tmp/helm-render ./test/deploy/helm-render
//	(packages golang-go, golang-github-masterminds-sprig-dev, golang-k8s-sigs-yaml-dev,
//	golang-github-xeipuuv-gojsonschema-dev)
//	/tmp/helm-render -chart helm/sluice -f my-values.yaml [-parent parent-template.yaml]
//
// Output: "---\n# Source: <chart>/templates/<file>\n<manifest>" per rendered template, then
// "---\n# NOTES\n<notes>". A failed render (e.g. `fail`) exits 1 with Helm-like text on stderr.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig"
	"github.com/xeipuuv/gojsonschema"
	"sigs.k8s.io/yaml"
)

type valueFiles []string

func (v *valueFiles) String() string     { return strings.Join(*v, ",") }
func (v *valueFiles) Set(s string) error { *v = append(*v, s); return nil }

// Files mirrors Helm's .Files: the chart's files by path relative to the chart root.
type Files map[string][]byte

func (f Files) Get(name string) string { return string(f[name]) }

func (f Files) GetBytes(name string) []byte { return f[name] }

type chartMeta struct {
	Name, Version, AppVersion, Description, Type, KubeVersion string
}

func main() {
	chartDir := flag.String("chart", "", "chart directory")
	release := flag.String("release", "test", "release name")
	namespace := flag.String("namespace", "default", "release namespace")
	parent := flag.String("parent", "", "a parent chart's template to render with .Values.<chart> = this chart's values")
	kubeVersion := flag.String("kube-version", "v1.30.0", "the cluster's version as .Capabilities.KubeVersion (helm template --kube-version)")
	var files valueFiles
	flag.Var(&files, "f", "values file (repeatable; later ones win)")
	flag.Parse()
	if err := run(*chartDir, *release, *namespace, *parent, *kubeVersion, files); err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		os.Exit(1)
	}
}

func run(chartDir, releaseName, namespace, parentTemplate, kubeVersion string, valueFiles []string) error {
	var meta chartMeta
	if err := readYaml(filepath.Join(chartDir, "Chart.yaml"), &meta); err != nil {
		return err
	}
	values := map[string]interface{}{}
	if err := readYaml(filepath.Join(chartDir, "values.yaml"), &values); err != nil {
		return err
	}
	for _, f := range valueFiles {
		override := map[string]interface{}{}
		if err := readYaml(f, &override); err != nil {
			return err
		}
		coalesce(values, override)
	}
	chartFiles, err := loadFiles(chartDir)
	if err != nil {
		return err
	}
	if schema, ok := chartFiles["values.schema.json"]; ok {
		if err := validateValues(meta.Name, schema, values); err != nil {
			return err
		}
	}

	root := template.New("gotpl").Option("missingkey=zero")
	root.Funcs(funcMap(root))
	var names []string
	for path, data := range chartFiles {
		if !strings.HasPrefix(path, "templates/") {
			continue
		}
		name := meta.Name + "/" + path
		if _, err := root.New(name).Parse(string(data)); err != nil {
			return err
		}
		names = append(names, name)
	}
	if parentTemplate != "" {
		data, err := os.ReadFile(parentTemplate)
		if err != nil {
			return err
		}
		if _, err := root.New("parent/templates/" + filepath.Base(parentTemplate)).Parse(string(data)); err != nil {
			return err
		}
	}
	sort.Strings(names)

	versionParts := strings.SplitN(strings.TrimPrefix(kubeVersion, "v"), ".", 3)
	if len(versionParts) < 2 {
		return fmt.Errorf("-kube-version %q is not v<major>.<minor>[.<patch>]", kubeVersion)
	}
	major, minor := versionParts[0], versionParts[1]
	release := map[string]interface{}{"Name": releaseName, "Namespace": namespace, "Service": "Helm", "IsInstall": true, "IsUpgrade": false, "Revision": 1}
	context := func(name string, vals map[string]interface{}) map[string]interface{} {
		return map[string]interface{}{
			"Values":       vals,
			"Release":      release,
			"Chart":        meta,
			"Files":        Files(chartFiles),
			"Capabilities": map[string]interface{}{"KubeVersion": map[string]interface{}{"Version": kubeVersion, "Major": major, "Minor": minor}},
			"Template":     map[string]interface{}{"Name": name, "BasePath": meta.Name + "/templates"},
		}
	}

	var out strings.Builder
	var notes string
	for _, name := range names {
		base := filepath.Base(name)
		if strings.HasPrefix(base, "_") {
			continue
		}
		text, err := execute(root, name, context(name, values))
		if err != nil {
			return err
		}
		if base == "NOTES.txt" {
			notes = text
			continue
		}
		if strings.TrimSpace(text) == "" {
			continue
		}
		fmt.Fprintf(&out, "---\n# Source: %s\n%s\n", name, text)
	}
	if parentTemplate != "" {
		name := "parent/templates/" + filepath.Base(parentTemplate)
		text, err := execute(root, name, context(name, map[string]interface{}{meta.Name: values}))
		if err != nil {
			return err
		}
		fmt.Fprintf(&out, "---\n# Source: %s\n%s\n", name, text)
	}
	fmt.Fprintf(&out, "---\n# NOTES\n%s\n", notes)
	_, err = os.Stdout.WriteString(out.String())
	return err
}

func execute(t *template.Template, name string, data interface{}) (string, error) {
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, name, data); err != nil {
		return "", err
	}
	return strings.ReplaceAll(buf.String(), "<no value>", ""), nil
}

// funcMap is sprig's, less env/expandenv, plus Helm's own (as helm.sh/helm/v3/pkg/engine/funcs.go).
func funcMap(t *template.Template) template.FuncMap {
	f := sprig.TxtFuncMap()
	delete(f, "env")
	delete(f, "expandenv")
	includedNames := map[string]int{}
	f["include"] = func(name string, data interface{}) (string, error) {
		if includedNames[name] > 1000 {
			return "", fmt.Errorf("rendering template has a nested reference name: %s", name)
		}
		includedNames[name]++
		defer func() { includedNames[name]-- }()
		var buf bytes.Buffer
		if err := t.ExecuteTemplate(&buf, name, data); err != nil {
			return "", err
		}
		return buf.String(), nil
	}
	f["tpl"] = func(text string, data interface{}) (string, error) {
		clone, err := t.Clone()
		if err != nil {
			return "", err
		}
		parsed, err := clone.New("tpl").Parse(text)
		if err != nil {
			return "", err
		}
		var buf bytes.Buffer
		if err := parsed.Execute(&buf, data); err != nil {
			return "", err
		}
		return strings.ReplaceAll(buf.String(), "<no value>", ""), nil
	}
	f["required"] = func(msg string, val interface{}) (interface{}, error) {
		if val == nil || val == "" {
			return val, fmt.Errorf("%s", msg)
		}
		return val, nil
	}
	f["toYaml"] = func(v interface{}) string {
		data, err := yaml.Marshal(v)
		if err != nil {
			return ""
		}
		return strings.TrimSuffix(string(data), "\n")
	}
	f["fromYaml"] = func(s string) map[string]interface{} {
		m := map[string]interface{}{}
		if err := yaml.Unmarshal([]byte(s), &m); err != nil {
			m["Error"] = err.Error()
		}
		return m
	}
	f["toJson"] = func(v interface{}) string {
		data, err := yaml.Marshal(v)
		if err != nil {
			return ""
		}
		j, err := yaml.YAMLToJSON(data)
		if err != nil {
			return ""
		}
		return string(j)
	}
	f["fromJson"] = f["fromYaml"]
	f["lookup"] = func(string, string, string, string) (map[string]interface{}, error) {
		return map[string]interface{}{}, nil
	}
	return f
}

// coalesce merges src into dst as Helm merges values files: maps deep, anything else replaced, null deletes.
func coalesce(dst, src map[string]interface{}) {
	for k, v := range src {
		if v == nil {
			delete(dst, k)
			continue
		}
		sm, sIsMap := v.(map[string]interface{})
		dm, dIsMap := dst[k].(map[string]interface{})
		if sIsMap && dIsMap {
			coalesce(dm, sm)
		} else {
			dst[k] = v
		}
	}
}

func readYaml(path string, into interface{}) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := yaml.Unmarshal(data, into); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	return nil
}

func loadFiles(chartDir string) (map[string][]byte, error) {
	files := map[string][]byte{}
	err := filepath.Walk(chartDir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, err := filepath.Rel(chartDir, path)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)] = data
		return nil
	})
	return files, err
}

// validateValues checks the merged values against values.schema.json as Helm 3 does
// (pkg/chartutil.ValidateAgainstSchema), with the same wording of the error.
func validateValues(chartName string, schema []byte, values map[string]interface{}) error {
	valuesYaml, err := yaml.Marshal(values)
	if err != nil {
		return err
	}
	valuesJSON, err := yaml.YAMLToJSON(valuesYaml)
	if err != nil {
		return err
	}
	result, err := gojsonschema.Validate(gojsonschema.NewBytesLoader(schema), gojsonschema.NewBytesLoader(valuesJSON))
	if err != nil {
		return fmt.Errorf("%s: values.schema.json: %v", chartName, err)
	}
	if result.Valid() {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "values don't meet the specifications of the schema(s) in the following chart(s):\n%s:\n", chartName)
	for _, e := range result.Errors() {
		fmt.Fprintf(&b, "- %s\n", e)
	}
	return fmt.Errorf("%s", b.String())
}
