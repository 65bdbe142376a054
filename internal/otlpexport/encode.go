package otlpexport

import (
	"math"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/gpuwatt/gpuwatt/internal/pbwire"
)

// The OTLP protobuf field numbers written here, from opentelemetry-proto's
// opentelemetry/proto/{collector/metrics,metrics,common,resource}/v1/*.proto (as generated
// in go.opentelemetry.io/proto/otlp v1.11.1). testdata/sdk-v1.47.0.pb, a request of the
// OpenTelemetry Go SDK, checks them (TestEncodingMatchesSDK).
const (
	fieldRequestResourceMetrics = 1 // ExportMetricsServiceRequest.resource_metrics

	fieldResourceMetricsResource = 1 // ResourceMetrics.resource
	fieldResourceMetricsScope    = 2 // ResourceMetrics.scope_metrics

	fieldResourceAttributes = 1 // Resource.attributes

	fieldScopeMetricsScope   = 1 // ScopeMetrics.scope
	fieldScopeMetricsMetrics = 2 // ScopeMetrics.metrics

	fieldScopeName = 1 // InstrumentationScope.name

	fieldMetricName        = 1 // Metric.name
	fieldMetricDescription = 2 // Metric.description
	fieldMetricUnit        = 3 // Metric.unit
	fieldMetricGauge       = 5 // Metric.gauge
	fieldMetricSum         = 7 // Metric.sum

	fieldGaugeDataPoints = 1 // Gauge.data_points

	fieldSumDataPoints  = 1 // Sum.data_points
	fieldSumTemporality = 2 // Sum.aggregation_temporality
	fieldSumMonotonic   = 3 // Sum.is_monotonic

	fieldPointStart      = 2 // NumberDataPoint.start_time_unix_nano (fixed64)
	fieldPointTime       = 3 // NumberDataPoint.time_unix_nano (fixed64)
	fieldPointDouble     = 4 // NumberDataPoint.as_double (fixed64)
	fieldPointAttributes = 7 // NumberDataPoint.attributes

	fieldKeyValueKey   = 1 // KeyValue.key
	fieldKeyValueValue = 2 // KeyValue.value

	fieldAnyString = 1 // AnyValue.string_value
	fieldAnyBool   = 2 // AnyValue.bool_value
	fieldAnyInt    = 3 // AnyValue.int_value

	// temporalityCumulative is AGGREGATION_TEMPORALITY_CUMULATIVE.
	temporalityCumulative = 2

	fieldResponsePartialSuccess = 1 // ExportMetricsServiceResponse.partial_success
	fieldPartialRejected        = 1 // ExportMetricsPartialSuccess.rejected_data_points
	fieldPartialMessage         = 2 // ExportMetricsPartialSuccess.error_message
)

// Attr is one attribute: Value is a string, an int64 or a bool (the only kinds gpuwatt
// sends).
type Attr struct {
	Key   string
	Value any
}

// metricData is one metric of a push: a monotonic cumulative sum (Sum) or a gauge.
type metricData struct {
	name, description, unit string
	sum                     bool
	points                  []point
}

type point struct {
	attrs []Attr
	value float64
}

// encodeRequest is the ExportMetricsServiceRequest of one push: one resource, one scope,
// the metrics that have points (a metric without points is left out, and the scope with
// it where none has any: the SDK did so). Every point has the exporter's start as its start
// time and the push's time as its time.
func encodeRequest(resource []Attr, scope string, metrics []metricData, start, now time.Time) []byte {
	var sm []byte
	sm = appendMessage(sm, fieldScopeMetricsScope, protowire.AppendString(protowire.AppendTag(nil, fieldScopeName, protowire.BytesType), scope))
	some := false
	for _, m := range metrics {
		if len(m.points) == 0 {
			continue
		}
		some = true
		sm = appendMessage(sm, fieldScopeMetricsMetrics, encodeMetric(m, unixNano(start), unixNano(now)))
	}
	var res []byte
	for _, a := range resource {
		res = appendMessage(res, fieldResourceAttributes, encodeKeyValue(a))
	}
	rm := appendMessage(nil, fieldResourceMetricsResource, res)
	if some {
		rm = appendMessage(rm, fieldResourceMetricsScope, sm)
	}
	return appendMessage(nil, fieldRequestResourceMetrics, rm)
}

func encodeMetric(m metricData, start, now uint64) []byte {
	b := appendString(nil, fieldMetricName, m.name)
	b = appendString(b, fieldMetricDescription, m.description)
	b = appendString(b, fieldMetricUnit, m.unit)
	pointsField := protowire.Number(fieldGaugeDataPoints)
	if m.sum {
		pointsField = fieldSumDataPoints
	}
	var data []byte
	for _, p := range m.points {
		data = appendMessage(data, pointsField, encodePoint(p, start, now))
	}
	if !m.sum {
		return appendMessage(b, fieldMetricGauge, data)
	}
	data = protowire.AppendTag(data, fieldSumTemporality, protowire.VarintType)
	data = protowire.AppendVarint(data, temporalityCumulative)
	data = protowire.AppendTag(data, fieldSumMonotonic, protowire.VarintType)
	data = protowire.AppendVarint(data, 1)
	return appendMessage(b, fieldMetricSum, data)
}

func encodePoint(p point, start, now uint64) []byte {
	b := protowire.AppendTag(nil, fieldPointStart, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, start)
	b = protowire.AppendTag(b, fieldPointTime, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, now)
	for _, a := range p.attrs {
		b = appendMessage(b, fieldPointAttributes, encodeKeyValue(a))
	}
	// The value (a oneof) last, where the Go protobuf runtime writes a oneof: the bytes are
	// then the SDK's own (TestEncodingMatchesSDK).
	b = protowire.AppendTag(b, fieldPointDouble, protowire.Fixed64Type)
	return protowire.AppendFixed64(b, math.Float64bits(p.value))
}

// encodeKeyValue writes the value as its oneof member, present even where it is zero
// (false, 0, ""), as a oneof is.
func encodeKeyValue(a Attr) []byte {
	var v []byte
	switch x := a.Value.(type) {
	case bool:
		v = protowire.AppendTag(v, fieldAnyBool, protowire.VarintType)
		v = protowire.AppendVarint(v, protowire.EncodeBool(x))
	case int64:
		v = protowire.AppendTag(v, fieldAnyInt, protowire.VarintType)
		v = protowire.AppendVarint(v, uint64(x))
	case string:
		v = protowire.AppendTag(v, fieldAnyString, protowire.BytesType)
		v = protowire.AppendString(v, x)
	default:
		panic("otlpexport: an attribute's value is a string, an int64 or a bool")
	}
	b := appendString(nil, fieldKeyValueKey, a.Key)
	return appendMessage(b, fieldKeyValueValue, v)
}

// appendString appends a proto3 string field, left out where empty.
func appendString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func appendMessage(b []byte, num protowire.Number, msg []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, msg)
}

func unixNano(t time.Time) uint64 {
	if t.IsZero() {
		return 0
	}
	return uint64(t.UnixNano())
}

// partialSuccess reads an ExportMetricsServiceResponse: the number of points the collector
// rejected and its message (0 and "" where it took them all). A body that does not parse is
// an error.
func partialSuccess(b []byte) (rejected int64, msg string, err error) {
	err = pbwire.Each(b, func(f pbwire.Field) error {
		if f.Num != fieldResponsePartialSuccess {
			return nil
		}
		ps, err := f.Message()
		if err != nil {
			return err
		}
		return pbwire.Each(ps, func(f pbwire.Field) error {
			var err error
			switch f.Num {
			case fieldPartialRejected:
				var v uint64
				v, err = f.Varint()
				rejected = int64(v)
			case fieldPartialMessage:
				msg, err = f.String()
			}
			return err
		})
	})
	return rejected, msg, err
}
