package push

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
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
		{"nulls mean absent", `{"v":1,"runtime":"cupy","runtime_version":null,"labels":null,"client_dropped":null,
			"devices":[{"uuid":"MIG-1/2/3","pools":[{"name":"cupy","parent":null,"allocated":0,"reserved":0,"limit":null}]}]}`,
			Message{V: 1, Runtime: "cupy", Devices: []Device{{UUID: "MIG-1/2/3", Pools: []Pool{{Name: "cupy"}}}}}},
		{"unknown fields ignored at every level", `{"v":1,"runtime":"torch","future":{"a":[1,2.5e3,{"b":null}],"c":"\u00e9"},
			"devices":[{"uuid":"GPU-a","extra":[[]],"pools":[{"name":"p","allocated":1,"reserved":2,"new_counter":-3.5}]}]}`,
			Message{V: 1, Runtime: "torch", Devices: []Device{{UUID: "GPU-a", Pools: []Pool{{Name: "p", Allocated: 1, Reserved: 2}}}}}},
		{"escapes decoded", `{"v":1,"runtime":"t\u006frch","labels":{"model":"caf\u00e9 \ud83d\ude00 \"q\""},"devices":[]}`,
			Message{V: 1, Runtime: "torch", Labels: map[string]string{"model": "café 😀 \"q\""}}},
		{"largest value", `{"v":1,"runtime":"torch","devices":[{"uuid":"GPU-a","pools":[{"name":"p","allocated":1125899906842624,"reserved":1125899906842624}]}]}`,
			Message{V: 1, Runtime: "torch", Devices: []Device{{UUID: "GPU-a", Pools: []Pool{{Name: "p", Allocated: 1 << 50, Reserved: 1 << 50}}}}}},
		{"parent listed after child", `{"v":1,"runtime":"torch","devices":[{"uuid":"GPU-a","pools":[
			{"name":"kv","parent":"torch","allocated":1,"reserved":1},{"name":"torch","allocated":1,"reserved":2}]}]}`,
			Message{V: 1, Runtime: "torch", Devices: []Device{{UUID: "GPU-a", Pools: []Pool{
				{Name: "kv", Parent: "torch", Allocated: 1, Reserved: 1}, {Name: "torch", Allocated: 1, Reserved: 2}}}}}},
	}
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
	if len(got) != 18 {
		t.Fatalf("Reasons() has %d entries, the protocol lists 18", len(got))
	}
	for _, r := range got {
		if reasonIndex(r) < 0 {
			t.Errorf("reason %s has no counter", r)
		}
	}
}
