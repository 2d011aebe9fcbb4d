package push

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const oomDevice = `{"uuid": "GPU-1", "pools": [{"name": "torch", "allocated": 10, "reserved": 20}]`

func withAllocator(obj string) string {
	return `{"v":1,"runtime":"torch","allocator":` + obj + `,"devices":[]}`
}

func withOOM(fields string) string {
	return `{"v":1,"runtime":"torch","devices":[` + oomDevice + `,` + fields + `}]}`
}

func TestDecodeDiagnosisFields(t *testing.T) {
	set := func(v uint64) Optional { return Optional{Value: v, Set: true} }
	in := `{"v":1,"runtime":"torch","allocator":{"expandable_segments":"True","max_split_size_mb":"512"},
	 "devices":[` + oomDevice + `, "oom_seq": 7, "oom_events": [
	  {"seq": 6, "source": "counter"},
	  {"seq": 7, "source": "observer", "requested": 4096, "device_free": 100, "device_limit": 8000,
	   "allocated": 10, "reserved": 20, "inactive_split": 5, "largest_free_block": 2, "future": [1]}]}]}`
	m, err := Decode([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"expandable_segments": "True", "max_split_size_mb": "512"}; !reflect.DeepEqual(m.Allocator, want) {
		t.Errorf("Allocator = %v, want %v", m.Allocator, want)
	}
	d := m.Devices[0]
	if d.OOMSeq != set(7) {
		t.Errorf("OOMSeq = %v, want 7", d.OOMSeq)
	}
	want := []OOMEvent{
		{Seq: 6, Source: OOMSourceCounter},
		{Seq: 7, Source: OOMSourceObserver, Requested: set(4096), DeviceFree: set(100), DeviceLimit: set(8000),
			Allocated: set(10), Reserved: set(20), InactiveSplit: set(5), LargestFreeBlock: set(2)},
	}
	if !reflect.DeepEqual(d.OOMEvents, want) {
		t.Errorf("OOMEvents = %+v, want %+v", d.OOMEvents, want)
	}
}

// An older client sends neither field; null means absent, as for every optional field.
func TestDecodeDiagnosisFieldsOptional(t *testing.T) {
	for _, in := range []string{
		`{"v":1,"runtime":"torch","devices":[` + oomDevice + `}]}`,
		`{"v":1,"runtime":"torch","allocator":null,"devices":[` + oomDevice + `,"oom_seq":null,"oom_events":null}]}`,
		withOOM(`"oom_seq": 0, "oom_events": []`),
	} {
		m, err := Decode([]byte(in))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if m.Allocator != nil || m.Devices[0].OOMEvents != nil {
			t.Errorf("%s: got allocator %v, events %v; want none", in, m.Allocator, m.Devices[0].OOMEvents)
		}
	}
}

func TestDecodeDiagnosisRejects(t *testing.T) {
	events := func(n int) string {
		var parts []string
		for i := 1; i <= n; i++ {
			parts = append(parts, fmt.Sprintf(`{"seq":%d}`, i))
		}
		return fmt.Sprintf(`"oom_seq": %d, "oom_events": [%s]`, n, strings.Join(parts, ","))
	}
	settings := func(n int) string {
		var parts []string
		for i := range n {
			parts = append(parts, fmt.Sprintf(`"k%d":"v"`, i))
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	runReasonCases(t, []reasonCase{
		{"16 settings", withAllocator(settings(MaxAllocatorSettings)), ""},
		{"17 settings", withAllocator(settings(MaxAllocatorSettings + 1)), ReasonInvalidAllocator},
		{"setting key upper case", withAllocator(`{"Backend":"native"}`), ReasonInvalidAllocator},
		{"setting key too long", withAllocator(`{"` + strings.Repeat("k", MaxAllocatorKeyBytes+1) + `":"v"}`), ReasonInvalidAllocator},
		{"setting key longest", withAllocator(`{"` + strings.Repeat("k", MaxAllocatorKeyBytes) + `":"v"}`), ""},
		{"setting value empty", withAllocator(`{"backend":""}`), ReasonInvalidAllocator},
		{"setting value with space", withAllocator(`{"backend":"a b"}`), ReasonInvalidAllocator},
		{"setting value list", withAllocator(`{"roundup_power2_divisions":"[256:1]"}`), ReasonInvalidAllocator},
		{"setting value too long", withAllocator(`{"backend":"` + strings.Repeat("v", MaxAllocatorValueBytes+1) + `"}`), ReasonInvalidAllocator},
		{"setting value longest", withAllocator(`{"backend":"` + strings.Repeat("v", MaxAllocatorValueBytes) + `"}`), ""},
		{"setting twice", withAllocator(`{"backend":"a","backend":"b"}`), ReasonInvalidAllocator},
		{"setting value a number", withAllocator(`{"max_split_size_mb":512}`), ReasonSchema},
		{"allocator an array", withAllocator(`[]`), ReasonSchema},
		{"8 events", withOOM(events(MaxOOMEvents)), ""},
		{"9 events", withOOM(events(MaxOOMEvents + 1)), ReasonTooManyOOMEvents},
		{"event without seq", withOOM(`"oom_seq":1,"oom_events":[{"requested":1}]`), ReasonSchema},
		{"event seq 0", withOOM(`"oom_seq":1,"oom_events":[{"seq":0}]`), ReasonInvalidOOMEvent},
		{"events without oom_seq", withOOM(`"oom_events":[{"seq":1}]`), ReasonInvalidOOMEvent},
		{"event seq above oom_seq", withOOM(`"oom_seq":1,"oom_events":[{"seq":2}]`), ReasonInvalidOOMEvent},
		{"events out of order", withOOM(`"oom_seq":3,"oom_events":[{"seq":3},{"seq":2}]`), ReasonInvalidOOMEvent},
		{"event seq twice", withOOM(`"oom_seq":3,"oom_events":[{"seq":2},{"seq":2}]`), ReasonInvalidOOMEvent},
		{"event allocated above reserved", withOOM(`"oom_seq":1,"oom_events":[{"seq":1,"allocated":3,"reserved":2}]`), ReasonInvalidOOMEvent},
		{"event unknown source", withOOM(`"oom_seq":1,"oom_events":[{"seq":1,"source":"guess"}]`), ReasonInvalidOOMEvent},
		{"event negative request", withOOM(`"oom_seq":1,"oom_events":[{"seq":1,"requested":-1}]`), ReasonInvalidBytes},
		{"event field twice", withOOM(`"oom_seq":1,"oom_events":[{"seq":1,"seq":1}]`), ReasonSchema},
		{"oom_seq fraction", withOOM(`"oom_seq":1.5`), ReasonInvalidBytes},
		{"events an object", withOOM(`"oom_seq":1,"oom_events":{}`), ReasonSchema},
	})
}

// testdata/python_diagnosis.json is what client/python's Reporter encodes for a torch
// process after one OOM (client/python/test_diagnosis.py checks it; UPDATE_FIXTURES=1
// rewrites it): the two sides agree on the wire.
func TestDecodePythonClientDiagnosis(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "python_diagnosis.json"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := Decode(b)
	if err != nil {
		t.Fatalf("the Python client's message is rejected: %v", err)
	}
	if m.Allocator["expandable_segments"] != "True" || len(m.Devices) != 1 || m.Devices[0].OOMSeq.Value != 1 ||
		len(m.Devices[0].OOMEvents) != 1 || m.Devices[0].OOMEvents[0].Requested.Value != 3<<30 {
		t.Errorf("decoded %+v", m)
	}
}

func TestDecodePhasePeaks(t *testing.T) {
	m, err := Decode([]byte(withOOM(`"phase_peaks":[{"phase":"preprocess","peak_allocated":5},{"phase":"infer","peak_allocated":9,"x":1}]`)))
	if err != nil {
		t.Fatal(err)
	}
	if want := []PhasePeak{{"preprocess", 5}, {"infer", 9}}; !reflect.DeepEqual(m.Devices[0].PhasePeaks, want) {
		t.Errorf("PhasePeaks = %+v, want %+v", m.Devices[0].PhasePeaks, want)
	}
	phases := func(n int) string {
		var parts []string
		for i := range n {
			parts = append(parts, fmt.Sprintf(`{"phase":"p%d","peak_allocated":1}`, i))
		}
		return `"phase_peaks":[` + strings.Join(parts, ",") + `]`
	}
	runReasonCases(t, []reasonCase{
		{"16 phases", withOOM(phases(MaxPhases)), ""},
		{"17 phases", withOOM(phases(MaxPhases + 1)), ReasonInvalidPhase},
		{"phase twice", withOOM(`"phase_peaks":[{"phase":"a","peak_allocated":1},{"phase":"a","peak_allocated":2}]`), ReasonInvalidPhase},
		{"phase upper case", withOOM(`"phase_peaks":[{"phase":"Infer","peak_allocated":1}]`), ReasonInvalidPhase},
		{"phase too long", withOOM(`"phase_peaks":[{"phase":"` + strings.Repeat("p", MaxPhaseBytes+1) + `","peak_allocated":1}]`), ReasonInvalidPhase},
		{"phase without peak", withOOM(`"phase_peaks":[{"phase":"a"}]`), ReasonSchema},
		{"phase peak null", withOOM(`"phase_peaks":[{"phase":"a","peak_allocated":null}]`), ReasonSchema},
		{"phase_peaks null", withOOM(`"phase_peaks":null`), ""},
	})
}

func TestDecodeTRTEngines(t *testing.T) {
	set := func(v uint64) Optional { return Optional{Value: v, Set: true} }
	m, err := Decode([]byte(withOOM(`"trt_engines":[{"engine":"trt.weights","contexts":4,"context_bytes":100,"held_bytes":400,
	  "weights_bytes":50,"streamable_bytes":40,"streaming_budget_bytes":20,"later":true}]`)))
	if err != nil {
		t.Fatal(err)
	}
	want := []TRTEngine{{Engine: "trt.weights", Contexts: 4, ContextBytes: set(100), HeldBytes: set(400), WeightsBytes: set(50),
		StreamableBytes: set(40), StreamingBudgetBytes: set(20)}}
	if !reflect.DeepEqual(m.Devices[0].TRTEngines, want) {
		t.Errorf("TRTEngines = %+v, want %+v", m.Devices[0].TRTEngines, want)
	}
	engines := func(n int) string {
		var parts []string
		for i := range n {
			parts = append(parts, fmt.Sprintf(`{"engine":"e%d","contexts":1}`, i))
		}
		return `"trt_engines":[` + strings.Join(parts, ",") + `]`
	}
	runReasonCases(t, []reasonCase{
		{"8 engines", withOOM(engines(MaxTRTEngines)), ""},
		{"9 engines", withOOM(engines(MaxTRTEngines + 1)), ReasonInvalidTRTEngine},
		{"engine twice", withOOM(`"trt_engines":[{"engine":"a","contexts":1},{"engine":"a","contexts":2}]`), ReasonInvalidTRTEngine},
		{"engine name with space", withOOM(`"trt_engines":[{"engine":"a b","contexts":1}]`), ReasonInvalidTRTEngine},
		{"engine without contexts", withOOM(`"trt_engines":[{"engine":"a"}]`), ReasonSchema},
		{"contexts negative", withOOM(`"trt_engines":[{"engine":"a","contexts":-1}]`), ReasonInvalidBytes},
	})
}
