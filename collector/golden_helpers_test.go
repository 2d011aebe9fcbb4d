package collector

import (
	"flag"
	"io"

	"github.com/prometheus/client_golang/prometheus"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

var update = flag.Bool("update", false, "rewrite testdata/golden.prom from the current output")

func writeFamily(w io.Writer, mf *dto.MetricFamily) error {
	_, err := expfmt.MetricFamilyToText(w, mf)
	return err
}

// asCollector replays gathered families through the Collector interface so that a
// pedantic Registry can check them.
type asCollector struct{ g *Collector }

func (a asCollector) Describe(chan<- *prometheus.Desc) {}

func (a asCollector) Collect(ch chan<- prometheus.Metric) {
	mfs, _ := a.g.Gather()
	for _, mf := range mfs {
		for _, m := range mf.Metric {
			names, values := []string{}, []string{}
			for _, lp := range m.Label {
				names = append(names, lp.GetName())
				values = append(values, lp.GetValue())
			}
			d := prometheus.NewDesc(mf.GetName(), mf.GetHelp(), names, nil)
			typ, v := prometheus.GaugeValue, m.GetGauge().GetValue()
			if mf.GetType() == dto.MetricType_COUNTER {
				typ, v = prometheus.CounterValue, m.GetCounter().GetValue()
			}
			ch <- prometheus.MustNewConstMetric(d, typ, v, values...)
		}
	}
}
