package collector

import (
	"sort"
	"unsafe"

	dto "github.com/prometheus/client_model/go"
)

// The collectors build the exposition's families directly instead of going through
// prometheus.MustNewConstMetric and a Registry. A scrape of 8 GPUs × 64 processes is a
// few thousand series; the Registry path sorted every label pair, hashed every series
// for consistency and allocated a dozen times per series (≈ 4 ms per scrape). Here label
// names are sorted once per family, each series is one allocation, and consistency is
// what the golden and lint tests check instead.

// maxLabels bounds the fixed-label families (vram_gpu_info has the most).
const maxLabels = 9

// slab is how many small series one block holds.
const slab = 256

// metricDesc is one fixed family: name, HELP, type and label names.
type metricDesc struct {
	name, help string
	typ        dto.MetricType
	labels     []string  // in the order callers pass values
	perm       []int     // perm[i] = index into labels of the i-th label in name order
	names      []*string // label names in name order, shared by every series
}

func newMetricDesc(name, help string, typ dto.MetricType, labels ...string) *metricDesc {
	if len(labels) > maxLabels {
		panic("collector: too many labels for " + name)
	}
	d := &metricDesc{name: name, help: help, typ: typ, labels: labels}
	d.perm = make([]int, len(labels))
	for i := range d.perm {
		d.perm[i] = i
	}
	sort.Slice(d.perm, func(a, b int) bool { return labels[d.perm[a]] < labels[d.perm[b]] })
	for _, i := range d.perm {
		n := labels[i]
		d.names = append(d.names, &n)
	}
	return d
}

// series is one sample with everything it points to in a single allocation; small
// serves the common families (≤ 5 labels) without carrying the widest one's slots.
type series struct {
	m      dto.Metric
	gauge  dto.Gauge
	count  dto.Counter
	value  float64
	pairs  [maxLabels]dto.LabelPair
	ptrs   [maxLabels]*dto.LabelPair
	values [maxLabels]string
}

type small struct {
	m      dto.Metric
	gauge  dto.Gauge
	count  dto.Counter
	value  float64
	pairs  [5]dto.LabelPair
	ptrs   [5]*dto.LabelPair
	values [5]string
}

// emitter collects the series of one scrape, grouped by family in first-use order.
type emitter struct {
	// Series are carved from slabs: a scrape allocates a few large blocks instead of
	// one object per series, and a pooled emitter (Transactional) reuses them, so a
	// scrape allocates almost nothing and leaves the GC nothing to do.
	smalls [][]small
	wides  [][]series
	sb, wb int // current block of each
	fams   map[*metricDesc]*dto.MetricFamily
	order  []*metricDesc
	extra  []*dto.MetricFamily // families with per-series label names (runtime info)
	out    []*dto.MetricFamily

	// What the last use filled, recorded by reset for trim.
	usedSmall, usedWide int
	lastLen             map[*metricDesc]int
}

func newEmitter() *emitter {
	return &emitter{fams: make(map[*metricDesc]*dto.MetricFamily, 64)}
}

func (e *emitter) add(d *metricDesc, v float64, lv []string) {
	if len(lv) != len(d.labels) {
		panic("collector: " + d.name + " got the wrong number of label values")
	}
	mf := e.fams[d]
	if mf == nil {
		name, help, typ := d.name, d.help, d.typ
		mf = &dto.MetricFamily{Name: &name, Help: &help, Type: &typ}
		e.fams[d] = mf
	}
	if len(mf.Metric) == 0 {
		e.order = append(e.order, d)
	}
	var (
		m      *dto.Metric
		gauge  *dto.Gauge
		count  *dto.Counter
		value  *float64
		pairs  []dto.LabelPair
		ptrs   []*dto.LabelPair
		values []string
	)
	if len(d.perm) <= 5 {
		s := carve(&e.smalls, &e.sb, slab)
		m, gauge, count, value, pairs, ptrs, values = &s.m, &s.gauge, &s.count, &s.value, s.pairs[:], s.ptrs[:], s.values[:]
	} else {
		s := carve(&e.wides, &e.wb, slab/8)
		m, gauge, count, value, pairs, ptrs, values = &s.m, &s.gauge, &s.count, &s.value, s.pairs[:], s.ptrs[:], s.values[:]
	}
	*value = v
	// Empty values stay in, as client_golang writes them: every series of a family has
	// the same label names, and Prometheus reads an empty value as an absent label.
	n := len(d.perm)
	for i, j := range d.perm {
		values[i] = lv[j]
		pairs[i] = dto.LabelPair{Name: d.names[i], Value: &values[i]}
		ptrs[i] = &pairs[i]
	}
	m.Label = ptrs[:n:n]
	if d.typ == dto.MetricType_COUNTER {
		count.Value = value
		m.Counter = count
	} else {
		gauge.Value = value
		m.Gauge = gauge
	}
	mf.Metric = append(mf.Metric, m)
}

// carve returns the next zeroed element of the block list, adding a block of n when the
// current one is full.
func carve[T any](blocks *[][]T, cur *int, n int) *T {
	for {
		if *cur == len(*blocks) {
			*blocks = append(*blocks, make([]T, 0, n))
		}
		b := &(*blocks)[*cur]
		if len(*b) < cap(*b) {
			*b = (*b)[:len(*b)+1]
			p := &(*b)[len(*b)-1]
			var zero T
			*p = zero // a reused slot must not carry the last scrape's fields
			return p
		}
		*cur++
	}
}

// reset empties the emitter for the next scrape, keeping its blocks and families.
func (e *emitter) reset() {
	if e.lastLen == nil {
		e.lastLen = make(map[*metricDesc]int, len(e.fams))
	}
	clear(e.lastLen)
	for _, d := range e.order {
		e.lastLen[d] = len(e.fams[d].Metric)
	}
	e.usedSmall, e.usedWide = e.sb, e.wb
	for i := range e.smalls {
		e.smalls[i] = e.smalls[i][:0]
	}
	for i := range e.wides {
		e.wides[i] = e.wides[i][:0]
	}
	e.sb, e.wb = 0, 0
	for _, d := range e.order {
		mf := e.fams[d]
		clear(mf.Metric)
		mf.Metric = mf.Metric[:0]
	}
	e.order = e.order[:0]
	e.extra = nil
}

func (e *emitter) gauge(d *metricDesc, v float64, lv ...string) { e.add(d, v, lv) }

func (e *emitter) counter(d *metricDesc, v float64, lv ...string) { e.add(d, v, lv) }

// families returns the non-empty families sorted by name.
func (e *emitter) families() []*dto.MetricFamily {
	out := e.out[:0]
	for _, d := range e.order {
		mf := e.fams[d]
		// Series in label-value order, as client_golang writes them: a stable
		// exposition for diffs and golden files.
		sort.Slice(mf.Metric, func(a, b int) bool { return labelsLess(mf.Metric[a].Label, mf.Metric[b].Label) })
		out = append(out, mf)
	}
	out = append(out, e.extra...)
	sort.Slice(out, func(a, b int) bool { return out[a].GetName() < out[b].GetName() })
	e.out = out
	return out
}

func labelsLess(a, b []*dto.LabelPair) bool {
	for i := range a {
		if i >= len(b) {
			return false
		}
		if va, vb := *a[i].Value, *b[i].Value; va != vb {
			return va < vb
		}
	}
	return len(a) < len(b)
}

// trim drops what the last use did not need, after reset: the blocks past those it
// filled and family slices far longer than their last length, so a pooled emitter that
// once served a large view does not keep its memory for good.
func (e *emitter) trim() {
	keep := func(last int) int { return last + 1 } // blocks 0..last were filled
	if k := keep(e.usedSmall); k < len(e.smalls) {
		clear(e.smalls[k:])
		e.smalls = e.smalls[:k]
	}
	if k := keep(e.usedWide); k < len(e.wides) {
		clear(e.wides[k:])
		e.wides = e.wides[:k]
	}
	for d, mf := range e.fams {
		if n := e.lastLen[d]; cap(mf.Metric) > 2*n+16 {
			mf.Metric = nil
		}
	}
}

// retained is roughly how many bytes of series storage the emitter holds (tests).
func (e *emitter) retained() int {
	n := 0
	for _, b := range e.smalls {
		n += cap(b) * int(unsafe.Sizeof(small{}))
	}
	for _, b := range e.wides {
		n += cap(b) * int(unsafe.Sizeof(series{}))
	}
	for _, mf := range e.fams {
		n += cap(mf.Metric) * int(unsafe.Sizeof((*dto.Metric)(nil)))
	}
	return n
}
