package otlptest

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/gpuwatt/gpuwatt/internal/pbwire"
)

// Request is a decoded ExportMetricsServiceRequest (the parts a number metric has:
// histograms and summaries are kept as metrics of Kind "other" without points).
type Request struct {
	ResourceMetrics []ResourceMetrics
}

// ResourceMetrics is one resource's metrics.
type ResourceMetrics struct {
	Resource     []KeyValue // the resource's attributes, in the request's order
	SchemaURL    string
	ScopeMetrics []ScopeMetrics
}

// ScopeMetrics is one instrumentation scope's metrics.
type ScopeMetrics struct {
	Name, Version string
	Metrics       []Metric
}

// Metric is one metric.
type Metric struct {
	Name, Description, Unit string
	Kind                    string // "sum", "gauge" or "other"
	Temporality             int    // a sum's aggregation temporality
	Monotonic               bool
	Points                  []DataPoint
}

// TemporalityCumulative is AggregationTemporality's CUMULATIVE, the only one gpuwatt sends
// (DELTA, 1, would be a defect).
const TemporalityCumulative = 2

// DataPoint is one NumberDataPoint.
type DataPoint struct {
	Attrs       []KeyValue
	StartNs, Ns uint64
	Value       float64
	IsInt       bool // the value was as_int
	Flags       uint64
}

// KeyValue is an attribute: Kind "string", "bool", "int" or "double" (or the field number
// of another AnyValue member, as "field N"), Text its value as text.
type KeyValue struct {
	Key, Kind, Text string
}

// The field numbers of opentelemetry-proto v1 read here (opentelemetry/proto/...).
const (
	fRequestResourceMetrics = 1 // ExportMetricsServiceRequest.resource_metrics

	fRMResource  = 1 // ResourceMetrics.resource
	fRMScope     = 2 // ResourceMetrics.scope_metrics
	fRMSchemaURL = 3 // ResourceMetrics.schema_url

	fResourceAttributes = 1 // Resource.attributes

	fSMScope   = 1 // ScopeMetrics.scope
	fSMMetrics = 2 // ScopeMetrics.metrics

	fScopeName    = 1 // InstrumentationScope.name
	fScopeVersion = 2 // InstrumentationScope.version

	fMetricName        = 1  // Metric.name
	fMetricDescription = 2  // Metric.description
	fMetricUnit        = 3  // Metric.unit
	fMetricGauge       = 5  // Metric.gauge
	fMetricSum         = 7  // Metric.sum
	fMetricHistogram   = 9  // Metric.histogram
	fMetricExpHist     = 10 // Metric.exponential_histogram
	fMetricSummary     = 11 // Metric.summary

	fDataPoints     = 1 // Gauge.data_points and Sum.data_points
	fSumTemporality = 2 // Sum.aggregation_temporality
	fSumMonotonic   = 3 // Sum.is_monotonic

	fDPStart      = 2 // NumberDataPoint.start_time_unix_nano
	fDPTime       = 3 // NumberDataPoint.time_unix_nano
	fDPDouble     = 4 // NumberDataPoint.as_double
	fDPInt        = 6 // NumberDataPoint.as_int (sfixed64)
	fDPAttributes = 7 // NumberDataPoint.attributes
	fDPFlags      = 8 // NumberDataPoint.flags

	fKVKey   = 1 // KeyValue.key
	fKVValue = 2 // KeyValue.value

	fAnyString = 1 // AnyValue.string_value
	fAnyBool   = 2 // AnyValue.bool_value
	fAnyInt    = 3 // AnyValue.int_value
	fAnyDouble = 4 // AnyValue.double_value
)

// Decode decodes an ExportMetricsServiceRequest; bytes that are not one are an error.
func Decode(b []byte) (*Request, error) {
	req := &Request{}
	err := pbwire.Each(b, func(f pbwire.Field) error {
		if f.Num != fRequestResourceMetrics {
			return nil
		}
		msg, err := f.Message()
		if err != nil {
			return err
		}
		rm, err := decodeResourceMetrics(msg)
		req.ResourceMetrics = append(req.ResourceMetrics, rm)
		return err
	})
	return req, err
}

func decodeResourceMetrics(b []byte) (ResourceMetrics, error) {
	var rm ResourceMetrics
	err := pbwire.Each(b, func(f pbwire.Field) error {
		var err error
		switch f.Num {
		case fRMResource:
			var msg []byte
			if msg, err = f.Message(); err == nil {
				err = pbwire.Each(msg, func(f pbwire.Field) error {
					if f.Num != fResourceAttributes {
						return nil
					}
					kv, err := decodeKeyValue(f)
					rm.Resource = append(rm.Resource, kv)
					return err
				})
			}
		case fRMScope:
			var msg []byte
			if msg, err = f.Message(); err == nil {
				var sm ScopeMetrics
				sm, err = decodeScopeMetrics(msg)
				rm.ScopeMetrics = append(rm.ScopeMetrics, sm)
			}
		case fRMSchemaURL:
			rm.SchemaURL, err = f.String()
		}
		return err
	})
	return rm, err
}

func decodeScopeMetrics(b []byte) (ScopeMetrics, error) {
	var sm ScopeMetrics
	err := pbwire.Each(b, func(f pbwire.Field) error {
		var err error
		switch f.Num {
		case fSMScope:
			var msg []byte
			if msg, err = f.Message(); err == nil {
				err = pbwire.Each(msg, func(f pbwire.Field) error {
					var err error
					switch f.Num {
					case fScopeName:
						sm.Name, err = f.String()
					case fScopeVersion:
						sm.Version, err = f.String()
					}
					return err
				})
			}
		case fSMMetrics:
			var msg []byte
			if msg, err = f.Message(); err == nil {
				var m Metric
				m, err = decodeMetric(msg)
				sm.Metrics = append(sm.Metrics, m)
			}
		}
		return err
	})
	return sm, err
}

func decodeMetric(b []byte) (Metric, error) {
	var m Metric
	err := pbwire.Each(b, func(f pbwire.Field) error {
		var err error
		switch f.Num {
		case fMetricName:
			m.Name, err = f.String()
		case fMetricDescription:
			m.Description, err = f.String()
		case fMetricUnit:
			m.Unit, err = f.String()
		case fMetricGauge, fMetricSum:
			if m.Kind != "" {
				return fmt.Errorf("metric %q: two kinds of data", m.Name)
			}
			m.Kind = "gauge"
			if f.Num == fMetricSum {
				m.Kind = "sum"
			}
			var msg []byte
			if msg, err = f.Message(); err == nil {
				err = decodeNumberData(msg, &m)
			}
		case fMetricHistogram, fMetricExpHist, fMetricSummary:
			m.Kind = "other"
			_, err = f.Message()
		}
		return err
	})
	return m, err
}

// decodeNumberData reads a Gauge or a Sum (a gauge has only field 1).
func decodeNumberData(b []byte, m *Metric) error {
	return pbwire.Each(b, func(f pbwire.Field) error {
		var err error
		switch {
		case f.Num == fDataPoints:
			var msg []byte
			if msg, err = f.Message(); err == nil {
				var dp DataPoint
				dp, err = decodeDataPoint(msg)
				m.Points = append(m.Points, dp)
			}
		case f.Num == fSumTemporality && m.Kind == "sum":
			var v uint64
			v, err = f.Varint()
			m.Temporality = int(v)
		case f.Num == fSumMonotonic && m.Kind == "sum":
			var v uint64
			v, err = f.Varint()
			m.Monotonic = v != 0
		}
		return err
	})
}

func decodeDataPoint(b []byte) (DataPoint, error) {
	var dp DataPoint
	values := 0
	err := pbwire.Each(b, func(f pbwire.Field) error {
		var err error
		switch f.Num {
		case fDPStart:
			dp.StartNs, err = f.Fixed64()
		case fDPTime:
			dp.Ns, err = f.Fixed64()
		case fDPDouble:
			dp.Value, err = f.Double()
			values++
		case fDPInt:
			var v uint64
			v, err = f.Fixed64()
			dp.Value, dp.IsInt = float64(int64(v)), true
			values++
		case fDPAttributes:
			var kv KeyValue
			kv, err = decodeKeyValue(f)
			dp.Attrs = append(dp.Attrs, kv)
		case fDPFlags:
			dp.Flags, err = f.Varint()
		}
		return err
	})
	if err == nil && values != 1 {
		err = fmt.Errorf("a data point with %d values", values)
	}
	return dp, err
}

func decodeKeyValue(f pbwire.Field) (KeyValue, error) {
	var kv KeyValue
	msg, err := f.Message()
	if err != nil {
		return kv, err
	}
	err = pbwire.Each(msg, func(f pbwire.Field) error {
		var err error
		switch f.Num {
		case fKVKey:
			kv.Key, err = f.String()
		case fKVValue:
			var v []byte
			if v, err = f.Message(); err == nil {
				kv.Kind, kv.Text, err = decodeAnyValue(v)
			}
		}
		return err
	})
	if err == nil && kv.Kind == "" {
		err = errors.New("an attribute without a value: " + kv.Key)
	}
	return kv, err
}

func decodeAnyValue(b []byte) (kind, text string, err error) {
	err = pbwire.Each(b, func(f pbwire.Field) error {
		var err error
		var v uint64
		switch f.Num {
		case fAnyString:
			kind = "string"
			text, err = f.String()
		case fAnyBool:
			kind = "bool"
			v, err = f.Varint()
			text = strconv.FormatBool(v != 0)
		case fAnyInt:
			kind = "int"
			v, err = f.Varint()
			text = strconv.FormatInt(int64(v), 10)
		case fAnyDouble:
			kind = "double"
			v, err = f.Fixed64()
			text = strconv.FormatFloat(math.Float64frombits(v), 'g', -1, 64)
		default:
			kind, text = fmt.Sprintf("field %d", f.Num), fmt.Sprint(f.Bytes)
		}
		return err
	})
	return kind, text, err
}
