package collector

import (
	"flag"
	"io"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

var update = flag.Bool("update", false, "rewrite testdata/golden.prom from the current output")

func writeFamily(w io.Writer, mf *dto.MetricFamily) error {
	_, err := expfmt.MetricFamilyToText(w, mf)
	return err
}
