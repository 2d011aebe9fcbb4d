package push

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"unicode/utf8"
)

// validateMessage re-checks every invariant an accepted message must satisfy, written
// independently of the scanner so the fuzzer can catch the scanner letting something by.
func validateMessage(m Message) error {
	if m.V != 1 {
		return fmt.Errorf("v = %d", m.V)
	}
	if !validRuntime([]byte(m.Runtime)) {
		return fmt.Errorf("runtime %q", m.Runtime)
	}
	if len(m.RuntimeVersion) > MaxRuntimeVersionBytes || !utf8.ValidString(m.RuntimeVersion) {
		return fmt.Errorf("runtime_version %q", m.RuntimeVersion)
	}
	if len(m.Labels) > MaxLabels {
		return fmt.Errorf("%d labels", len(m.Labels))
	}
	for k, v := range m.Labels {
		if labelNameProblem([]byte(k)) != "" || len(v) == 0 || len(v) > MaxLabelValueBytes || !utf8.ValidString(v) {
			return fmt.Errorf("label %q=%q", k, v)
		}
	}
	if m.ClientDropped > MaxValue {
		return fmt.Errorf("client_dropped %d", m.ClientDropped)
	}
	if o := m.RequestsInFlight; o.Value > MaxRequestsInFlight || (!o.Set && o.Value != 0) {
		return fmt.Errorf("requests_in_flight %+v", o)
	}
	if len(m.Devices) > MaxDevices {
		return fmt.Errorf("%d devices", len(m.Devices))
	}
	uuids := map[string]bool{}
	for _, d := range m.Devices {
		if !validUUID([]byte(d.UUID)) || uuids[d.UUID] {
			return fmt.Errorf("uuid %q", d.UUID)
		}
		uuids[d.UUID] = true
		if len(d.Pools) > MaxPools {
			return fmt.Errorf("%d pools", len(d.Pools))
		}
		names := map[string]string{}
		for _, p := range d.Pools {
			if !validPoolName([]byte(p.Name)) || names[p.Name] != "" {
				return fmt.Errorf("pool %q", p.Name)
			}
			names[p.Name] = "|" + p.Parent
			if p.Allocated > p.Reserved || p.Reserved > MaxValue {
				return fmt.Errorf("pool %q allocated %d reserved %d", p.Name, p.Allocated, p.Reserved)
			}
			for _, o := range []Optional{p.PeakAllocated, p.Active, p.InactiveSplit, p.Limit, p.AllocRetries, p.OOMs} {
				if o.Value > MaxValue || (!o.Set && o.Value != 0) {
					return fmt.Errorf("pool %q optional %+v", p.Name, o)
				}
			}
		}
		for _, p := range d.Pools {
			if p.Parent == "" {
				continue
			}
			pp, ok := names[p.Parent]
			if !ok || p.Parent == p.Name || pp != "|" {
				return fmt.Errorf("pool %q parent %q", p.Name, p.Parent)
			}
		}
	}
	return nil
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(typicalMessage))
	f.Add([]byte(multiGPUMessage(2)))
	f.Add([]byte(`{"v":1,"runtime":"jax","runtime_version":"0.4.30","devices":[{"uuid":"GPU-1","pools":[{"name":"jax","allocated":10,"reserved":20,"peak_allocated":15,"limit":100}]}]}`))
	f.Add([]byte(`{"v":1,"runtime":"tensorrt","labels":{"service":"det"},"devices":[{"uuid":"MIG-GPU-1/2/0","pools":[{"name":"trt.context","allocated":5,"reserved":5},{"name":"trt.weights","allocated":7,"reserved":7}]}]}`))
	f.Add([]byte(`{"v":1,"runtime":"t\u006frch","labels":{"model":"caf\u00e9"},"x":[{"y":null,"z":[true,false,-1.5e-3]}],"devices":[]}`))
	f.Add([]byte(`{"v":1,"runtime":"torch","labels":{"model":"\ud800x","m\u006fdel2":"\ud83d\ude00"},"devices":[]}`))
	f.Add([]byte(`{"x":{"a":1,"a":[{"b":1,"b":2}]},"x":0,"v":1,"runtime":"torch","devices":[{"uuid":"GPU-a","y":1,"y":2,"pools":[{"name":"p","z":[],"z":{},"allocated":0,"reserved":0,"ooms":null}]}]}`))
	f.Add([]byte(`{"v":1,"\u0076":1,"runtime":"torch","devices":[]}`))
	f.Add([]byte(" {\"v\":1,\"runtime\":\"torch\",\"devices\":[],\"deep\":[[[[{\"a\":[[]]}]]]]}\n\t"))
	f.Add([]byte(`{"v":1,"runtime":"torch","client_dropped":0,"requests_in_flight":3,"devices":[]}`))
	f.Add([]byte(`{"v":2}`))
	f.Add([]byte(`[`))
	f.Fuzz(func(t *testing.T, b []byte) {
		// Decode a copy and overwrite it afterwards: nothing decoded may alias the
		// message, whose buffer the server reuses.
		in := bytes.Clone(b)
		m, err := Decode(in)
		for i := range in {
			in[i] = '"'
		}
		if err != nil {
			var re *RejectError
			if !errors.As(err, &re) || reasonIndex(re.Reason) < 0 || re.Detail == "" {
				t.Fatalf("error %v is not a RejectError with a known reason and a detail", err)
			}
			if re.Reason == ReasonInvalidJSON && json.Valid(b) && utf8.Valid(b) {
				t.Fatalf("invalid_json (%s) for valid JSON %q", re.Detail, b)
			}
			if re.Reason != ReasonInvalidJSON && !json.Valid(b) {
				t.Fatalf("%s (%s) for invalid JSON %q", re.Reason, re.Detail, b)
			}
			return
		}
		if !json.Valid(b) || !utf8.Valid(b) {
			t.Fatalf("accepted invalid JSON %q", b)
		}
		if err := validateMessage(m); err != nil {
			t.Fatalf("accepted %q breaking an invariant: %v", b, err)
		}
		crossCheck(t, b, m)
	})
}

// crossCheck compares every field of an accepted message with what encoding/json reads
// from it into plain maps (exact keys). Decode refuses a repeated known field, and
// encoding/json keeps the last of repeated names, so both must agree on every known one.
func crossCheck(t *testing.T, b []byte, m Message) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var ref map[string]any
	if err := dec.Decode(&ref); err != nil {
		t.Fatalf("encoding/json refuses accepted %q: %v", b, err)
	}
	str := func(v any) string { s, _ := v.(string); return s }
	num := func(v any) (uint64, bool) {
		n, ok := v.(json.Number)
		if !ok {
			return 0, false
		}
		u, err := strconv.ParseUint(n.String(), 10, 64)
		if err != nil {
			t.Fatalf("accepted %q with a number %s that is no uint64", b, n)
		}
		return u, true
	}
	if fmt.Sprint(ref["v"]) != "1" || str(ref["runtime"]) != m.Runtime || str(ref["runtime_version"]) != m.RuntimeVersion {
		t.Fatalf("v/runtime/runtime_version disagree with encoding/json on %q", b)
	}
	if d, _ := num(ref["client_dropped"]); d != m.ClientDropped {
		t.Fatalf("client_dropped %d vs encoding/json %d on %q", m.ClientDropped, d, b)
	}
	if v, set := num(ref["requests_in_flight"]); (Optional{Value: v, Set: set}) != m.RequestsInFlight {
		t.Fatalf("requests_in_flight %+v vs encoding/json %v on %q", m.RequestsInFlight, ref["requests_in_flight"], b)
	}
	labels, _ := ref["labels"].(map[string]any)
	if len(labels) != len(m.Labels) {
		t.Fatalf("labels disagree with encoding/json on %q", b)
	}
	for k, v := range labels {
		if m.Labels[k] != v {
			t.Fatalf("label %q: %q vs encoding/json %q", k, m.Labels[k], v)
		}
	}
	devs, _ := ref["devices"].([]any)
	if len(devs) != len(m.Devices) {
		t.Fatalf("devices disagree with encoding/json on %q", b)
	}
	for i, d := range devs {
		dm := d.(map[string]any)
		pools := dm["pools"].([]any)
		if dm["uuid"] != m.Devices[i].UUID || len(pools) != len(m.Devices[i].Pools) {
			t.Fatalf("device %d disagrees with encoding/json on %q", i, b)
		}
		for j, p := range pools {
			pm, q := p.(map[string]any), m.Devices[i].Pools[j]
			alloc, _ := num(pm["allocated"])
			res, _ := num(pm["reserved"])
			if pm["name"] != q.Name || str(pm["parent"]) != q.Parent || alloc != q.Allocated || res != q.Reserved {
				t.Fatalf("pool %d/%d disagrees with encoding/json on %q", i, j, b)
			}
			for name, o := range map[string]Optional{"peak_allocated": q.PeakAllocated, "active": q.Active,
				"inactive_split": q.InactiveSplit, "limit": q.Limit, "alloc_retries": q.AllocRetries, "ooms": q.OOMs} {
				v, set := num(pm[name])
				if (Optional{Value: v, Set: set}) != o {
					t.Fatalf("pool %d/%d %s = %+v, encoding/json reads %v, on %q", i, j, name, o, pm[name], b)
				}
			}
		}
	}
}
