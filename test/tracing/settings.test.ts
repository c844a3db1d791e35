import { describe, expect, it } from 'vitest'
import { tracingSettingsFromEnv } from '../../src/tracing/settings.js'
import { startProxy } from '../support/proxy.js'

describe('traces are configured by the standard OTEL_* variables, and off unless asked', () => {
  it('off with no variable, with OTEL_TRACES_EXPORTER=none, and with OTEL_SDK_DISABLED=true whatever else is set', () => {
    expect(tracingSettingsFromEnv({})).toBeUndefined()
    expect(tracingSettingsFromEnv({ OTEL_SERVICE_NAME: 'x', OTEL_TRACES_SAMPLER: 'always_on' })).toBeUndefined()
    expect(
      tracingSettingsFromEnv({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }),
    ).toBeUndefined()
    expect(tracingSettingsFromEnv({ OTEL_SDK_DISABLED: 'TRUE', OTEL_TRACES_EXPORTER: 'otlp' })).toBeUndefined()
  })

  it('on with OTEL_TRACES_EXPORTER=otlp (the default collector) or with an endpoint; the defaults', () => {
    expect(tracingSettingsFromEnv({ OTEL_TRACES_EXPORTER: 'otlp' })).toEqual({
      url: 'http://localhost:4318/v1/traces',
      protocol: 'http/protobuf',
      sampler: 'parentbased_always_on',
      ratio: 1,
      serviceName: 'sluice',
      resourceAttributes: {},
    })
    // the general endpoint is the collector's root; the traces endpoint is used as given
    expect(tracingSettingsFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://collector:4318/otlp/' })?.url).toBe(
      'https://collector:4318/otlp/v1/traces',
    )
    expect(
      tracingSettingsFromEnv({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:1',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://b:2/traces',
      })?.url,
    ).toBe('http://b:2/traces')
  })

  it('protocol, sampler, service name and resource attributes as the specification reads them', () => {
    const s = tracingSettingsFromEnv({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
      OTEL_TRACES_SAMPLER: 'ParentBased_TraceIdRatio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
      OTEL_RESOURCE_ATTRIBUTES: 'service.name=from-attributes,deployment.environment.name=prod%2Ceu, team = crm',
    })
    expect(s).toMatchObject({
      protocol: 'http/json',
      sampler: 'parentbased_traceidratio',
      ratio: 0.25,
      serviceName: 'from-attributes',
    })
    expect(s?.resourceAttributes).toEqual({
      'service.name': 'from-attributes',
      'deployment.environment.name': 'prod,eu',
      team: 'crm',
    })
    expect(
      tracingSettingsFromEnv({
        OTEL_TRACES_EXPORTER: 'otlp',
        OTEL_SERVICE_NAME: 'edge',
        OTEL_RESOURCE_ATTRIBUTES: 'service.name=other',
      })?.serviceName,
    ).toBe('edge')
  })

  it('a variable that cannot be used is named (its URL never repeated)', () => {
    const failure = (env: Record<string, string>): string => {
      try {
        tracingSettingsFromEnv(env)
      } catch (err) {
        return (err as Error).message
      }
      return 'no error'
    }
    expect(failure({ OTEL_TRACES_EXPORTER: 'zipkin' })).toBe(
      'OTEL_TRACES_EXPORTER (from the environment): "zipkin" is not an exporter sluice has (otlp, none)',
    )
    expect(failure({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toBe(
      'OTEL_EXPORTER_OTLP_PROTOCOL (from the environment): "grpc" is not a protocol sluice sends (http/protobuf, http/json; grpc is not built in)',
    )
    expect(failure({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER: 'sometimes' })).toContain(
      'OTEL_TRACES_SAMPLER (from the environment): "sometimes" is not a sampler',
    )
    expect(failure({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER_ARG: '2' })).toBe(
      'OTEL_TRACES_SAMPLER_ARG (from the environment): "2" is not a ratio from 0 to 1',
    )
    expect(failure({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'collector.internal:4318?token=s3cret' })).toBe(
      'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (from the environment): not an http:// or https:// URL (sluice sends OTLP over HTTP)',
    )
    expect(failure({ OTEL_EXPORTER_OTLP_ENDPOINT: 'ftp://user:s3cret@collector' })).toBe(
      'OTEL_EXPORTER_OTLP_ENDPOINT (from the environment): not an http:// or https:// URL (sluice sends OTLP over HTTP)',
    )
    expect(failure({ OTEL_SDK_DISABLED: 'yes' })).toBe(
      'OTEL_SDK_DISABLED (from the environment): "yes" is neither true nor false',
    )
    expect(failure({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_RESOURCE_ATTRIBUTES: 'a=1,=2' })).toBe(
      'OTEL_RESOURCE_ATTRIBUTES (from the environment): every entry must be key=value',
    )
  })

  it('stops the start with a config error before anything listens', async () => {
    await expect(
      startProxy({ upstream: 'http://127.0.0.1:9/v2' }, { otelEnv: { OTEL_TRACES_EXPORTER: 'jaeger' } }),
    ).rejects.toMatchObject({
      code: 'SLUICE_CONFIG_INVALID',
      message: 'OTEL_TRACES_EXPORTER (from the environment): "jaeger" is not an exporter sluice has (otlp, none)',
    })
  })
})
