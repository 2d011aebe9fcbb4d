package push

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// typicalMessage is what the Python client sends for one GPU running torch with a vLLM KV
// cache carved out of the torch pool.
const typicalMessage = `{"v": 1, "runtime": "torch", "runtime_version": "2.11.0+cu130", "pid": 4242,
 "labels": {"service": "ranker", "model": "bert-base"}, "client_dropped": 3,
 "devices": [{"uuid": "GPU-5c3e2f4a-1b2c-4d5e-8f90-0123456789ab", "pools": [
  {"name": "torch", "allocated": 68157440, "reserved": 931135488, "peak_allocated": 2214592512,
   "active": 70254592, "inactive_split": 2097152, "limit": 150000000000, "alloc_retries": 0, "ooms": 1},
  {"name": "vllm.kv_cache", "parent": "torch", "allocated": 536870912, "reserved": 536870912}]}]}`

func typicalDecoded() Message {
	set := func(v uint64) Optional { return Optional{Value: v, Set: true} }
	return Message{
		V: 1, Runtime: "torch", RuntimeVersion: "2.11.0+cu130",
		Labels:        map[string]string{"service": "ranker", "model": "bert-base"},
		ClientDropped: 3,
		Devices: []Device{{UUID: "GPU-5c3e2f4a-1b2c-4d5e-8f90-0123456789ab", Pools: []Pool{
			{Name: "torch", Allocated: 68157440, Reserved: 931135488, PeakAllocated: set(2214592512),
				Active: set(70254592), InactiveSplit: set(2097152), Limit: set(150000000000),
				AllocRetries: set(0), OOMs: set(1)},
			{Name: "vllm.kv_cache", Parent: "torch", Allocated: 536870912, Reserved: 536870912},
		}}},
	}
}

// multiGPUMessage builds a message with n devices shaped like the typical one.
func multiGPUMessage(n int) string {
	var devs []string
	for i := range n {
		devs = append(devs, fmt.Sprintf(`{"uuid": "GPU-5c3e2f4a-1b2c-4d5e-8f90-0123456789%02d", "pools": [
  {"name": "torch", "allocated": 68157440, "reserved": 931135488, "peak_allocated": 2214592512,
   "active": 70254592, "inactive_split": 2097152, "alloc_retries": 0, "ooms": 0},
  {"name": "vllm.kv_cache", "parent": "torch", "allocated": 536870912, "reserved": 536870912}]}`, i))
	}
	return `{"v": 1, "runtime": "torch", "runtime_version": "2.11.0+cu130",
 "labels": {"service": "ranker", "model": "llama-70b"}, "client_dropped": 0,
 "devices": [` + strings.Join(devs, ",") + `]}`
}

func TestDecodeValid(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Message
	}{
		{"typical", typicalMessage, typicalDecoded()},
		{"minimal", `{"v":1,"runtime":"jax","devices":[]}`, Message{V: 1, Runtime: "jax"}},
		{"nulls mean absent", `{"v":1,"runtime":"cupy","runtime_version":null,"labels":null,"client_dropped":null,"requests_in_flight":null,
			"devices":[{"uuid":"MIG-1/2/3","pools":[{"name":"cupy","parent":null,"allocated":0,"reserved":0,"limit":null}]}]}`,
			Message{V: 1, Runtime: "cupy", Devices: []Device{{UUID: "MIG-1/2/3", Pools: []Pool{{Name: "cupy"}}}}}},
		{"unknown fields ignored at every level", `{"v":1,"runtime":"torch","future":{"a":[1,2.5e3,{"b":null}],"c":"\u00e9"},
			"devices":[{"uuid":"GPU-a","extra":[[]],"pools":[{"name":"p","allocated":1,"reserved":2,"new_counter":-3.5}]}]}`,
			Message{V: 1, Runtime: "torch", Devices: []Device{{UUID: "GPU-a", Pools: []Pool{{Name: "p", Allocated: 1, Reserved: 2}}}}}},
		{"requests in flight", `{"v":1,"runtime":"torch","client_dropped":2,"requests_in_flight":7,"devices":[]}`,
			Message{V: 1, Runtime: "torch", ClientDropped: 2, RequestsInFlight: Optional{Value: 7, Set: true}}},
		{"idle: 0 in flight is set", `{"v":1,"runtime":"torch","requests_in_flight":0,"devices":[]}`,
			Message{V: 1, Runtime: "torch", RequestsInFlight: Optional{Set: true}}},
		{"most requests in flight", `{"v":1,"runtime":"torch","requests_in_flight":1048576,"devices":[]}`,
			Message{V: 1, Runtime: "torch", RequestsInFlight: Optional{Value: MaxRequestsInFlight, Set: true}}},
		{"escapes decoded", `{"v":1,"runtime":"t\u006frch","labels":{"model":"caf\u00e9 \ud83d\ude00 \"q\""},"devices":[]}`,
			Message{V: 1, Runtime: "torch", Labels: map[string]string{"model": "café 😀 \"q\""}}},
		{"largest value", `{"v":1,"runtime":"torch","devices":[{"uuid":"GPU-a","pools":[{"name":"p","allocated":1125899906842624,"reserved":1125899906842624}]}]}`,
			Message{V: 1, Runtime: "torch", Devices: []Device{{UUID: "GPU-a", Pools: []Pool{{Name: "p", Allocated: 1 << 50, Reserved: 1 << 50}}}}}},
		{"parent listed after child", `{"v":1,"runtime":"torch","devices":[{"uuid":"GPU-a","pools":[
			{"name":"kv","parent":"torch","allocated":1,"reserved":1},{"name":"torch","allocated":1,"reserved":2}]}]}`,
			Message{V: 1, Runtime: "torch", Devices: []Device{{UUID: "GPU-a", Pools: []Pool{
				{Name: "kv", Parent: "torch", Allocated: 1, Reserved: 1}, {Name: "torch", Allocated: 1, Reserved: 2}}}}}},
	}
	// Devices and pools are gathered in reused slices: each device must keep its own.
	set := func(v uint64) Optional { return Optional{Value: v, Set: true} }
	three := Message{V: 1, Runtime: "torch", RuntimeVersion: "2.11.0+cu130",
		Labels: map[string]string{"service": "ranker", "model": "llama-70b"}}
	for i := range 3 {
		three.Devices = append(three.Devices, Device{UUID: fmt.Sprintf("GPU-5c3e2f4a-1b2c-4d5e-8f90-0123456789%02d", i), Pools: []Pool{
			{Name: "torch", Allocated: 68157440, Reserved: 931135488, PeakAllocated: set(2214592512),
				Active: set(70254592), InactiveSplit: set(2097152), AllocRetries: set(0), OOMs: set(0)},
			{Name: "vllm.kv_cache", Parent: "torch", Allocated: 536870912, Reserved: 536870912},
		}})
	}
	tests = append(tests, struct {
		name string
		in   string
		want Message
	}{"three devices", multiGPUMessage(3), three})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decode([]byte(tt.in))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Decode =\n%+v\nwant\n%+v", got, tt.want)
			}
			if err := validateMessage(got); err != nil {
				t.Errorf("accepted message breaks an invariant: %v", err)
			}
		})
	}
}

func pool(fields string) string {
	return `{"v":1,"runtime":"torch","devices":[{"uuid":"GPU-a","pools":[{"name":"p",` + fields + `}]}]}`
}

func TestDecodeRejects(t *testing.T) {
	many := func(n int, f func(i int) string) string {
		var parts []string
		for i := range n {
			parts = append(parts, f(i))
		}
		return strings.Join(parts, ",")
	}
	tests := []struct {
		name, in, reason string
	}{
		{"empty", ``, ReasonInvalidJSON},
		{"whitespace", " \n", ReasonInvalidJSON},
		{"truncated", typicalMessage[:100], ReasonInvalidJSON},
		{"trailing garbage", `{"v":1,"runtime":"torch","devices":[]} x`, ReasonInvalidJSON},
		{"two objects", `{"v":1,"runtime":"torch","devices":[]}{}`, ReasonInvalidJSON},
		{"single quotes", `{'v':1}`, ReasonInvalidJSON},
		{"leading zero", pool(`"allocated":01,"reserved":2`), ReasonInvalidJSON},
		{"bad number", pool(`"allocated":1.,"reserved":2`), ReasonInvalidJSON},
		{"raw newline in string", "{\"v\":1,\"runtime\":\"to\nrch\",\"devices\":[]}", ReasonInvalidJSON},
		{"invalid utf-8", "{\"v\":1,\"runtime\":\"torch\",\"labels\":{\"model\":\"\xff\"},\"devices\":[]}", ReasonInvalidJSON},
		{"bad escape", `{"v":1,"runtime":"torch","labels":{"model":"\x"},"devices":[]}`, ReasonInvalidJSON},
		{"syntax error after a schema error wins", `{"v":1,"runtime":7,"devices":[}`, ReasonInvalidJSON},
		{"syntax error in unknown field", `{"v":1,"runtime":"torch","devices":[],"x":[1,}`, ReasonInvalidJSON},
		{"top level array", `[1,2]`, ReasonSchema},
		{"top level string", `"hello"`, ReasonSchema},
		{"missing v", `{"runtime":"torch","devices":[]}`, ReasonSchema},
		{"missing runtime", `{"v":1,"devices":[]}`, ReasonSchema},
		{"missing devices", `{"v":1,"runtime":"torch"}`, ReasonSchema},
		{"null devices", `{"v":1,"runtime":"torch","devices":null}`, ReasonSchema},
		{"v as string", `{"v":"1","runtime":"torch","devices":[]}`, ReasonSchema},
		{"runtime as number", `{"v":1,"runtime":5,"devices":[]}`, ReasonSchema},
		{"devices as object", `{"v":1,"runtime":"torch","devices":{}}`, ReasonSchema},
		{"labels as array", `{"v":1,"runtime":"torch","labels":[],"devices":[]}`, ReasonSchema},
		{"label value number", `{"v":1,"runtime":"torch","labels":{"model":3},"devices":[]}`, ReasonSchema},
		{"duplicate field", `{"v":1,"runtime":"torch","runtime":"jax","devices":[]}`, ReasonSchema},
		{"device missing uuid", `{"v":1,"runtime":"torch","devices":[{"pools":[]}]}`, ReasonSchema},
		{"device missing pools", `{"v":1,"runtime":"torch","devices":[{"uuid":"GPU-a"}]}`, ReasonSchema},
		{"device not object", `{"v":1,"runtime":"torch","devices":[1]}`, ReasonSchema},
		{"pool missing reserved", pool(`"allocated":1`), ReasonSchema},
		{"pool missing name", `{"v":1,"runtime":"torch","devices":[{"uuid":"GPU-a","pools":[{"allocated":1,"reserved":1}]}]}`, ReasonSchema},
		{"bytes as string", pool(`"allocated":"1","reserved":2`), ReasonSchema},
		{"required bytes null", pool(`"allocated":null,"reserved":2`), ReasonSchema},
		{"duplicate pool field", pool(`"allocated":1,"allocated":1,"reserved":2`), ReasonSchema},
		{"version 2", `{"v":2,"runtime":"torch","devices":[]}`, ReasonUnsupportedVersion},
		{"version 1.0", `{"v":1.0,"runtime":"torch","devices":[]}`, ReasonUnsupportedVersion},
		{"version wins over earlier problem", `{"runtime":"TORCH","devices":7,"v":2}`, ReasonUnsupportedVersion},
		{"runtime upper case", `{"v":1,"runtime":"Torch","devices":[]}`, ReasonInvalidRuntime},
		{"runtime empty", `{"v":1,"runtime":"","devices":[]}`, ReasonInvalidRuntime},
		{"runtime too long", `{"v":1,"runtime":"` + strings.Repeat("a", 33) + `","devices":[]}`, ReasonInvalidRuntime},
		{"runtime_version control char", `{"v":1,"runtime":"torch","runtime_version":"2\u0007","devices":[]}`, ReasonInvalidRuntime},
		{"runtime_version too long", `{"v":1,"runtime":"torch","runtime_version":"` + strings.Repeat("1", 65) + `","devices":[]}`, ReasonInvalidRuntime},
		{"label reserved", `{"v":1,"runtime":"torch","labels":{"pid":"1"},"devices":[]}`, ReasonInvalidLabel},
		{"label dunder", `{"v":1,"runtime":"torch","labels":{"__name__":"x"},"devices":[]}`, ReasonInvalidLabel},
		{"label name digit first", `{"v":1,"runtime":"torch","labels":{"1a":"x"},"devices":[]}`, ReasonInvalidLabel},
		{"label name dash", `{"v":1,"runtime":"torch","labels":{"a-b":"x"},"devices":[]}`, ReasonInvalidLabel},
		{"label value empty", `{"v":1,"runtime":"torch","labels":{"model":""},"devices":[]}`, ReasonInvalidLabel},
		{"label value too long", `{"v":1,"runtime":"torch","labels":{"model":"` + strings.Repeat("x", 129) + `"},"devices":[]}`, ReasonInvalidLabel},
		{"label duplicate", `{"v":1,"runtime":"torch","labels":{"model":"a","model":"b"},"devices":[]}`, ReasonInvalidLabel},
		{"too many labels", `{"v":1,"runtime":"torch","labels":{` + many(9, func(i int) string { return fmt.Sprintf(`"l%d":"x"`, i) }) + `},"devices":[]}`, ReasonTooManyLabels},
		{"too many devices", `{"v":1,"runtime":"torch","devices":[` + many(17, func(i int) string { return fmt.Sprintf(`{"uuid":"GPU-%d","pools":[]}`, i) }) + `]}`, ReasonTooManyDevices},
		{"uuid without prefix", `{"v":1,"runtime":"torch","devices":[{"uuid":"5c3e2f4a-1b2c","pools":[]}]}`, ReasonInvalidUUID},
		{"uuid bad char", `{"v":1,"runtime":"torch","devices":[{"uuid":"GPU-a b","pools":[]}]}`, ReasonInvalidUUID},
		{"uuid too long", `{"v":1,"runtime":"torch","devices":[{"uuid":"GPU-` + strings.Repeat("a", 93) + `","pools":[]}]}`, ReasonInvalidUUID},
		{"uuid duplicate", `{"v":1,"runtime":"torch","devices":[{"uuid":"GPU-a","pools":[]},{"uuid":"GPU-a","pools":[]}]}`, ReasonInvalidUUID},
		{"too many pools", `{"v":1,"runtime":"torch","devices":[{"uuid":"GPU-a","pools":[` + many(33, func(i int) string { return fmt.Sprintf(`{"name":"p%d","allocated":0,"reserved":0}`, i) }) + `]}]}`, ReasonTooManyPools},
		{"pool bad name", `{"v":1,"runtime":"torch","devices":[{"uuid":"GPU-a","pools":[{"name":".x","allocated":0,"reserved":0}]}]}`, ReasonInvalidPool},
		{"pool duplicate name", `{"v":1,"runtime":"torch","devices":[{"uuid":"GPU-a","pools":[{"name":"p","allocated":0,"reserved":0},{"name":"p","allocated":0,"reserved":0}]}]}`, ReasonInvalidPool},
		{"pool allocated over reserved", pool(`"allocated":3,"reserved":2`), ReasonInvalidPool},
		{"pool parent missing", pool(`"parent":"nope","allocated":1,"reserved":2`), ReasonInvalidPool},
		{"pool parent itself", pool(`"parent":"p","allocated":1,"reserved":2`), ReasonInvalidPool},
		{"pool parent nested twice", `{"v":1,"runtime":"torch","devices":[{"uuid":"GPU-a","pools":[
			{"name":"a","allocated":0,"reserved":0},{"name":"b","parent":"a","allocated":0,"reserved":0},
			{"name":"c","parent":"b","allocated":0,"reserved":0}]}]}`, ReasonInvalidPool},
		{"fraction", pool(`"allocated":1.5,"reserved":2`), ReasonInvalidBytes},
		{"exponent", pool(`"allocated":1,"reserved":1e3`), ReasonInvalidBytes},
		{"negative", pool(`"allocated":-1,"reserved":2`), ReasonInvalidBytes},
		{"negative zero", pool(`"allocated":-0,"reserved":2`), ReasonInvalidBytes},
		{"over 2^50", pool(`"allocated":1,"reserved":1125899906842625`), ReasonInvalidBytes},
		{"huge", pool(`"allocated":1,"reserved":99999999999999999999999`), ReasonInvalidBytes},
		{"optional fraction", pool(`"allocated":1,"reserved":2,"ooms":0.5`), ReasonInvalidBytes},
		{"client_dropped negative", `{"v":1,"runtime":"torch","client_dropped":-2,"devices":[]}`, ReasonInvalidBytes},
		{"requests_in_flight negative", `{"v":1,"runtime":"torch","requests_in_flight":-1,"devices":[]}`, ReasonInvalidBytes},
		{"requests_in_flight over the max", `{"v":1,"runtime":"torch","requests_in_flight":1048577,"devices":[]}`, ReasonInvalidBytes},
		{"requests_in_flight over 2^50", `{"v":1,"runtime":"torch","requests_in_flight":1125899906842625,"devices":[]}`, ReasonInvalidBytes},
		{"requests_in_flight fraction", `{"v":1,"runtime":"torch","requests_in_flight":1.5,"devices":[]}`, ReasonInvalidBytes},
		{"requests_in_flight exponent", `{"v":1,"runtime":"torch","requests_in_flight":1e3,"devices":[]}`, ReasonInvalidBytes},
		{"requests_in_flight as string", `{"v":1,"runtime":"torch","requests_in_flight":"3","devices":[]}`, ReasonSchema},
		{"requests_in_flight as bool", `{"v":1,"runtime":"torch","requests_in_flight":true,"devices":[]}`, ReasonSchema},
		{"requests_in_flight as array", `{"v":1,"runtime":"torch","requests_in_flight":[1],"devices":[]}`, ReasonSchema},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode([]byte(tt.in))
			var re *RejectError
			if !errors.As(err, &re) {
				t.Fatalf("Decode error = %v, want a *RejectError with reason %s", err, tt.reason)
			}
			if re.Reason != tt.reason {
				t.Errorf("reason = %s (%s), want %s", re.Reason, re.Detail, tt.reason)
			}
			if re.Detail == "" {
				t.Error("empty Detail")
			}
			// Cross-check the syntax verdict against encoding/json.
			if (re.Reason == ReasonInvalidJSON) == json.Valid([]byte(tt.in)) && !strings.Contains(tt.name, "utf-8") {
				t.Errorf("reason %s disagrees with json.Valid = %v", re.Reason, json.Valid([]byte(tt.in)))
			}
		})
	}
}

func TestReasonsComplete(t *testing.T) {
	got := Reasons()
	if len(got) != 23 {
		t.Fatalf("Reasons() has %d entries, the protocol lists 23", len(got))
	}
	for _, r := range got {
		if reasonIndex(r) < 0 {
			t.Errorf("reason %s has no counter", r)
		}
	}
}

// reasonOf decodes in and returns the reject reason, or "" when the message is accepted.
func reasonOf(t *testing.T, in string) string {
	t.Helper()
	m, err := Decode([]byte(in))
	if err == nil {
		if err := validateMessage(m); err != nil {
			t.Errorf("accepted message breaks an invariant: %v", err)
		}
		return ""
	}
	var re *RejectError
	if !errors.As(err, &re) || reasonIndex(re.Reason) < 0 || re.Detail == "" {
		t.Fatalf("Decode error = %#v, want a *RejectError with a known reason and a Detail", err)
	}
	return re.Reason
}

type reasonCase struct{ name, in, reason string } // reason "" means accepted

func runReasonCases(t *testing.T, tests []reasonCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := reasonOf(t, tt.in); got != tt.reason {
				_, err := Decode([]byte(tt.in))
				t.Errorf("reason = %q (%v), want %q", got, err, tt.reason)
			}
		})
	}
}

// A repeated name is refused where the schema reads it and ignored where it does not
// (inside unknown fields, and unknown names of a known object), as encoding/json and
// RFC 8259 allow; escapes are decoded before names are compared.
func TestDecodeDuplicateNames(t *testing.T) {
	dev := func(fields string) string {
		return `{"v":1,"runtime":"torch","devices":[{` + fields + `}]}`
	}
	runReasonCases(t, []reasonCase{
		{"message field", `{"v":1,"runtime":"torch","devices":[],"devices":[]}`, ReasonSchema},
		{"message field v", `{"v":1,"v":1,"runtime":"torch","devices":[]}`, ReasonSchema},
		{"message field escaped", `{"v":1,"\u0076":1,"runtime":"torch","devices":[]}`, ReasonSchema},
		{"message optional field", `{"v":1,"runtime":"torch","client_dropped":1,"client_dropped":null,"devices":[]}`, ReasonSchema},
		{"message requests_in_flight twice", `{"v":1,"runtime":"torch","requests_in_flight":1,"requests_in_flight":1,"devices":[]}`, ReasonSchema},
		{"message requests_in_flight after null", `{"v":1,"runtime":"torch","requests_in_flight":null,"requests_in_flight":0,"devices":[]}`, ReasonSchema},
		{"device name requests_in_flight", dev(`"uuid":"GPU-a","requests_in_flight":1,"requests_in_flight":2,"pools":[]`), ""},
		{"message labels twice", `{"v":1,"runtime":"torch","labels":null,"labels":{},"devices":[]}`, ReasonSchema},
		{"message unknown field", `{"x":1,"x":2,"v":1,"runtime":"torch","devices":[]}`, ""},
		{"message name of a device field", `{"v":1,"uuid":1,"uuid":2,"runtime":"torch","devices":[]}`, ""},
		{"inside an unknown field", `{"v":1,"runtime":"torch","devices":[],"x":{"a":1,"a":{"b":[{"c":1,"c":2}]}}}`, ""},
		{"label", `{"v":1,"runtime":"torch","labels":{"model":"a","model":"b"},"devices":[]}`, ReasonInvalidLabel},
		{"label escaped", `{"v":1,"runtime":"torch","labels":{"model":"a","mod\u0065l":"b"},"devices":[]}`, ReasonInvalidLabel},
		{"device uuid", dev(`"uuid":"GPU-a","uuid":"GPU-b","pools":[]`), ReasonSchema},
		{"device pools", dev(`"uuid":"GPU-a","pools":[],"pools":[]`), ReasonSchema},
		{"device unknown field", dev(`"uuid":"GPU-a","x":1,"x":[],"pools":[]`), ""},
		{"device name of a pool field", dev(`"uuid":"GPU-a","name":1,"name":2,"pools":[]`), ""},
		{"pool name", pool(`"name":"q","allocated":0,"reserved":0`), ReasonSchema},
		{"pool parent", pool(`"parent":null,"parent":null,"allocated":0,"reserved":0`), ReasonSchema},
		{"pool optional", pool(`"allocated":0,"reserved":0,"ooms":null,"ooms":1`), ReasonSchema},
		{"pool unknown field", pool(`"allocated":0,"reserved":0,"x":1,"x":2`), ""},
		{"pool name of a message field", pool(`"allocated":0,"reserved":0,"v":1,"v":2`), ""},
		{"second device", `{"v":1,"runtime":"torch","devices":[{"uuid":"GPU-a","pools":[]},{"uuid":"GPU-b","uuid":"GPU-c","pools":[]}]}`, ReasonSchema},
		// The first problem decides, as for any other: a wrong version anywhere still
		// outranks it, and a syntax error anywhere outranks both.
		{"version wins over a repeated field", `{"runtime":"a","runtime":"b","v":2}`, ReasonUnsupportedVersion},
		{"syntax wins over a repeated field", `{"v":1,"runtime":"a","runtime":"b","devices":[],"x":[}`, ReasonInvalidJSON},
		{"too many labels before a repeated one", `{"v":1,"runtime":"torch","labels":{"l0":"x","l1":"x","l2":"x","l3":"x","l4":"x","l5":"x","l6":"x","l7":"x","l0":"y"},"devices":[]}`, ReasonTooManyLabels},
	})
}

func TestDecodeUTF8(t *testing.T) {
	msg := func(label string) string {
		return `{"v":1,"runtime":"torch","labels":{"model":"` + label + `"},"devices":[]}`
	}
	runReasonCases(t, []reasonCase{
		{"invalid byte in a value", msg("\xff"), ReasonInvalidJSON},
		{"invalid byte in a name", "{\"v\":1,\"runtime\":\"torch\",\"labels\":{\"m\xff\":\"x\"},\"devices\":[]}", ReasonInvalidJSON},
		{"invalid byte in an unknown field", "{\"v\":1,\"runtime\":\"torch\",\"devices\":[],\"x\":[\"\xc3\"]}", ReasonInvalidJSON},
		{"invalid byte in an unknown name", "{\"v\":1,\"runtime\":\"torch\",\"devices\":[],\"\xc3x\":1}", ReasonInvalidJSON},
		{"invalid byte between tokens", "{\"v\":1,\"runtime\":\"torch\",\"devices\":[]\xff}", ReasonInvalidJSON},
		{"overlong encoding", msg("\xc0\xaf"), ReasonInvalidJSON},
		{"encoded surrogate", msg("\xed\xa0\x80"), ReasonInvalidJSON},
		{"truncated sequence at the end", "{\"v\":1,\"runtime\":\"torch\",\"devices\":[]}\xe2\x82", ReasonInvalidJSON},
		{"invalid UTF-8 wins over a schema error", "{\"v\":\"1\",\"runtime\":\"\xff\"}", ReasonInvalidJSON},
		{"multi-byte text", msg("ünïcödé 😀"), ""},
		{"lone high surrogate escape", msg(`\ud800`), ""},
		{"lone low surrogate escape", msg(`\udc00x`), ""},
		{"surrogate pair escape", msg(`\ud83d\ude00`), ""},
	})
	// A lone surrogate escape decodes to U+FFFD (docs/protocol.md), as encoding/json has
	// it, and a surrogate pair to its character.
	for in, want := range map[string]string{`\ud800`: "\uFFFD", `a\udc00b`: "a\uFFFDb", `\ud800\u0041`: "\uFFFDA", `\ud83d\ude00`: "😀"} {
		m, err := Decode([]byte(msg(in)))
		if err != nil {
			t.Fatalf("Decode(%s): %v", in, err)
		}
		var ref map[string]map[string]string
		if err := json.Unmarshal([]byte(`{"l":{"model":"`+in+`"}}`), &ref); err != nil {
			t.Fatal(err)
		}
		if got := m.Labels["model"]; got != want || got != ref["l"]["model"] {
			t.Errorf("%s decodes to %q, want %q (encoding/json: %q)", in, got, want, ref["l"]["model"])
		}
	}
}

// Nesting is limited to 10000 levels, the limit of jsontext and of encoding/json; a
// message nested deeper is not valid JSON to either, so it is invalid_json, which
// outranks the schema error it may also have.
func TestDecodeNestingDepth(t *testing.T) {
	// The message's own object is the first level.
	for _, depth := range []int{2, 9999, 10000, 10001, 30000} {
		n := depth - 1
		for _, shape := range []struct{ name, open, close, leaf string }{
			{"arrays", "[", "]", ""}, {"objects", `{"a":`, "}", "0"},
		} {
			in := `{"v":1,"runtime":"torch","devices":[],"x":` + strings.Repeat(shape.open, n) + shape.leaf + strings.Repeat(shape.close, n) + `}`
			want := ReasonInvalidJSON
			if json.Valid([]byte(in)) {
				want = ""
			}
			if depth <= 10000 && want != "" {
				t.Fatalf("encoding/json refuses %d levels of %s", depth, shape.name)
			}
			if got := reasonOf(t, in); got != want {
				t.Errorf("%d levels of %s: reason %q, want %q", depth, shape.name, got, want)
			}
		}
	}
	deep := `{"v":1,"runtime":"torch","devices":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`
	if got := reasonOf(t, deep); got != ReasonInvalidJSON {
		t.Errorf("devices nested too deep: reason %q, want invalid_json", got)
	}
}

func TestDecodeNumbers(t *testing.T) {
	msg := func(x string) string { return `{"v":1,"runtime":"torch","devices":[],"x":` + x + `}` }
	runReasonCases(t, []reasonCase{
		// Any JSON number is fine where the schema does not read it.
		{"huge exponent, unknown field", msg(`1e999999`), ""},
		{"tiny exponent, unknown field", msg(`-1.5E-999999`), ""},
		{"negative zero, unknown field", msg(`-0`), ""},
		{"long integer, unknown field", msg(strings.Repeat("9", 400)), ""},
		{"lone minus", msg(`-`), ReasonInvalidJSON},
		{"leading plus", msg(`+1`), ReasonInvalidJSON},
		{"leading dot", msg(`.5`), ReasonInvalidJSON},
		{"trailing dot", msg(`5.`), ReasonInvalidJSON},
		{"empty exponent", msg(`5e`), ReasonInvalidJSON},
		{"leading zeros", msg(`00`), ReasonInvalidJSON},
		{"hex", msg(`0x10`), ReasonInvalidJSON},
		{"NaN", msg(`NaN`), ReasonInvalidJSON},
		{"zero", pool(`"allocated":0,"reserved":0`), ""},
		{"2^64", pool(`"allocated":1,"reserved":18446744073709551616`), ReasonInvalidBytes},
		{"2^50+1 in an optional field", pool(`"allocated":1,"reserved":2,"limit":1125899906842625`), ReasonInvalidBytes},
		{"exponent over range", pool(`"allocated":1,"reserved":1e400`), ReasonInvalidBytes},
		{"integral fraction with exponent", pool(`"allocated":1,"reserved":1.0e+5`), ReasonInvalidBytes},
		{"negative fraction", pool(`"allocated":-1.5,"reserved":2`), ReasonInvalidBytes},
		{"bytes leading zero", pool(`"allocated":00,"reserved":2`), ReasonInvalidJSON},
		{"client_dropped largest", `{"v":1,"runtime":"torch","client_dropped":1125899906842624,"devices":[]}`, ""},
		{"client_dropped over", `{"v":1,"runtime":"torch","client_dropped":1125899906842625,"devices":[]}`, ReasonInvalidBytes},
		{"requests_in_flight zero", `{"v":1,"runtime":"torch","requests_in_flight":0,"devices":[]}`, ""},
		{"requests_in_flight largest", `{"v":1,"runtime":"torch","requests_in_flight":1048576,"devices":[]}`, ""},
		{"requests_in_flight over", `{"v":1,"runtime":"torch","requests_in_flight":1048577,"devices":[]}`, ReasonInvalidBytes},
		{"requests_in_flight negative zero", `{"v":1,"runtime":"torch","requests_in_flight":-0,"devices":[]}`, ReasonInvalidBytes},
		{"requests_in_flight 2^64", `{"v":1,"runtime":"torch","requests_in_flight":18446744073709551616,"devices":[]}`, ReasonInvalidBytes},
		{"version with exponent", `{"v":1e0,"runtime":"torch","devices":[]}`, ReasonUnsupportedVersion},
		{"version negative", `{"v":-1,"runtime":"torch","devices":[]}`, ReasonUnsupportedVersion},
		{"version 10", `{"v":10,"runtime":"torch","devices":[]}`, ReasonUnsupportedVersion},
		{"version huge", `{"v":` + strings.Repeat("9", 100) + `,"runtime":"torch","devices":[]}`, ReasonUnsupportedVersion},
		{"version leading zero", `{"v":01,"runtime":"torch","devices":[]}`, ReasonInvalidJSON},
	})
}

func TestDecodeTrailingData(t *testing.T) {
	const ok = `{"v":1,"runtime":"torch","devices":[]}`
	runReasonCases(t, []reasonCase{
		{"whitespace around", " \t\r\n" + ok + " \t\r\n", ""},
		{"second object", ok + ` {}`, ReasonInvalidJSON},
		{"number", ok + `1`, ReasonInvalidJSON},
		{"closing bracket", ok + `]`, ReasonInvalidJSON},
		{"comma", ok + `,`, ReasonInvalidJSON},
		{"NUL", ok + "\x00", ReasonInvalidJSON},
		{"byte order mark", "\uFEFF" + ok, ReasonInvalidJSON},
		{"after a schema error", `{"v":1,"runtime":7,"devices":[]} x`, ReasonInvalidJSON},
		{"after a top-level array", `[1] x`, ReasonInvalidJSON},
		{"top-level array alone", `[1]`, ReasonSchema},
		{"after a wrong version", `{"v":2} x`, ReasonInvalidJSON},
	})
}

// Every limit a Detail states comes from its constant, so the two cannot drift.
func TestDecodeLimitsInDetails(t *testing.T) {
	many := func(n int, f func(i int) string) string {
		var parts []string
		for i := range n {
			parts = append(parts, f(i))
		}
		return strings.Join(parts, ",")
	}
	tests := []struct {
		in    string
		limit int
	}{
		{`{"v":1,"runtime":"` + strings.Repeat("a", MaxRuntimeBytes+1) + `","devices":[]}`, MaxRuntimeBytes - 1},
		{`{"v":1,"runtime":"torch","runtime_version":"` + strings.Repeat("1", MaxRuntimeVersionBytes+1) + `","devices":[]}`, MaxRuntimeVersionBytes},
		{`{"v":1,"runtime":"torch","labels":{` + many(MaxLabels+1, func(i int) string { return fmt.Sprintf(`"l%d":"x"`, i) }) + `},"devices":[]}`, MaxLabels},
		{`{"v":1,"runtime":"torch","labels":{"` + strings.Repeat("a", MaxLabelNameBytes+1) + `":"x"},"devices":[]}`, MaxLabelNameBytes},
		{`{"v":1,"runtime":"torch","labels":{"a-b":"x"},"devices":[]}`, MaxLabelNameBytes - 1},
		{`{"v":1,"runtime":"torch","labels":{"model":"` + strings.Repeat("x", MaxLabelValueBytes+1) + `"},"devices":[]}`, MaxLabelValueBytes},
		{`{"v":1,"runtime":"torch","devices":[` + many(MaxDevices+1, func(i int) string { return fmt.Sprintf(`{"uuid":"GPU-%d","pools":[]}`, i) }) + `]}`, MaxDevices},
		{`{"v":1,"runtime":"torch","devices":[{"uuid":"GPU-` + strings.Repeat("a", MaxUUIDBytes) + `","pools":[]}]}`, MaxUUIDBytes},
		{`{"v":1,"runtime":"torch","devices":[{"uuid":"GPU-a","pools":[` + many(MaxPools+1, func(i int) string { return fmt.Sprintf(`{"name":"p%d","allocated":0,"reserved":0}`, i) }) + `]}]}`, MaxPools},
		{pool(`"parent":".x","allocated":0,"reserved":0`), MaxPoolNameBytes - 1},
		{pool(`"allocated":1,"reserved":1125899906842625`), MaxValue},
		{`{"v":1,"runtime":"torch","requests_in_flight":1048577,"devices":[]}`, MaxRequestsInFlight},
		{`{"v":1,"runtime":"torch","requests_in_flight":-1,"devices":[]}`, MaxRequestsInFlight},
		{`{"v":1,"runtime":"torch","requests_in_flight":` + strings.Repeat("9", 30) + `,"devices":[]}`, MaxRequestsInFlight},
		{`{"v":2,"runtime":"torch","devices":[]}`, Version},
	}
	for _, tt := range tests {
		_, err := Decode([]byte(tt.in))
		var re *RejectError
		if !errors.As(err, &re) {
			t.Fatalf("Decode accepted %.60q…", tt.in)
		}
		if !strings.Contains(re.Detail, strconv.Itoa(tt.limit)) {
			t.Errorf("%s detail %q does not state the limit %d", re.Reason, re.Detail, tt.limit)
		}
	}
}

// The Store keeps what Decode returns while the server reuses its read buffer, so
// nothing decoded may alias the message, escaped or not.
func TestDecodeDoesNotAliasInput(t *testing.T) {
	for _, in := range []string{typicalMessage, strings.ReplaceAll(typicalMessage, `"torch"`, `"t\u006frch"`)} {
		b := []byte(in)
		m, err := Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := Decode([]byte(in))
		for i := range b {
			b[i] = 'X'
		}
		if !reflect.DeepEqual(m, want) {
			t.Errorf("overwriting the message changed the decoded Message:\n%+v\nwant\n%+v", m, want)
		}
	}
}

// Decoders are pooled: concurrent decodes, rejected ones among them, must not see each
// other's state.
func TestDecodeConcurrent(t *testing.T) {
	bad := []string{`{"v":1,"runtime":"torch","devices":[{"uuid":"GPU-a","pools":[{"name":"p","allocated":3`,
		pool(`"allocated":2,"reserved":1`), `{"runtime":"a","runtime":"b","v":2}`}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				in, n := multiGPUMessage(1+(g+i)%4), 1+(g+i)%4
				m, err := Decode([]byte(in))
				if err != nil || len(m.Devices) != n || m.Labels["model"] != "llama-70b" {
					t.Errorf("Decode of a %d-device message = %d devices, %v", n, len(m.Devices), err)
					return
				}
				if _, err := Decode([]byte(bad[i%len(bad)])); err == nil {
					t.Errorf("Decode accepted %q", bad[i%len(bad)])
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestHasBackslash(t *testing.T) {
	for n := range 40 {
		b := []byte(strings.Repeat("a", n))
		if hasBackslash(b) {
			t.Fatalf("hasBackslash(%q) = true", b)
		}
		for i := range n {
			c := bytes.Clone(b)
			c[i] = '\\'
			if !hasBackslash(c) {
				t.Fatalf("hasBackslash(%q) = false", c)
			}
			// Bytes one off from a backslash, and with the high bit set, are not one.
			for _, x := range []byte{'\\' - 1, '\\' + 1, '\\' | 0x80, 0xff, 0} {
				c[i] = x
				if hasBackslash(c) {
					t.Fatalf("hasBackslash(%q) = true", c)
				}
			}
		}
	}
}
