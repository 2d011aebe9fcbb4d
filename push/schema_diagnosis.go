package push

import (
	"fmt"

	"github.com/go-json-experiment/json/jsontext"
)

// The optional parts of the v1 schema that feed the diagnosis (docs/protocol.md,
// "Allocator settings" and "OOM events"). Older clients send neither; older daemons
// skip both as unknown fields, so v stays 1.

var (
	allocatorKeyPattern   = fmt.Sprintf("^[a-z][a-z0-9_]{0,%d}$", MaxAllocatorKeyBytes-1)
	allocatorValuePattern = fmt.Sprintf("^[A-Za-z0-9_.:+-]{1,%d}$", MaxAllocatorValueBytes)
)

// allocator reads the "allocator" object of settings. Keys and values become label
// values of vram_runtime_allocator_info, so both are short and of a small alphabet.
func (r *reader) allocator() (map[string]string, *RejectError) {
	null, err := r.open(jsontext.KindBeginObject, "allocator", true)
	if err != nil || null {
		return nil, err
	}
	var out map[string]string
	for {
		key, more, err := r.name()
		if err != nil {
			return nil, err
		}
		if !more {
			return out, nil
		}
		if len(out) == MaxAllocatorSettings {
			return nil, reject(ReasonInvalidAllocator, "more than %d allocator settings", MaxAllocatorSettings)
		}
		if !validAllocatorKey(key) {
			return nil, reject(ReasonInvalidAllocator, "allocator setting %s must match %s", quote(string(key)), allocatorKeyPattern)
		}
		name := string(key)
		if _, dup := out[name]; dup {
			return nil, reject(ReasonInvalidAllocator, "allocator setting %s appears twice", quote(name))
		}
		v, _, err := r.str("allocator setting "+name, false)
		if err != nil {
			return nil, err
		}
		if !validAllocatorValue(v) {
			return nil, reject(ReasonInvalidAllocator, "allocator setting %s value %s must match %s", quote(name), quote(string(v)), allocatorValuePattern)
		}
		if out == nil {
			out = make(map[string]string, 4)
		}
		out[name] = string(v)
	}
}

func validAllocatorKey(s []byte) bool {
	if len(s) == 0 || len(s) > MaxAllocatorKeyBytes || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

func validAllocatorValue(s []byte) bool {
	if len(s) == 0 || len(s) > MaxAllocatorValueBytes {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == ':' || c == '+' || c == '-') {
			return false
		}
	}
	return true
}

func (r *reader) oomEvents() ([]OOMEvent, *RejectError) {
	null, err := r.open(jsontext.KindBeginArray, "oom_events", true)
	if err != nil || null {
		return nil, err
	}
	var evs []OOMEvent
	for n := 0; ; n++ {
		more, err := r.element(jsontext.KindBeginObject, "oom_events[]")
		if err != nil {
			return nil, err
		}
		if !more {
			return evs, nil
		}
		if n == MaxOOMEvents {
			return nil, reject(ReasonTooManyOOMEvents, "more than %d OOM events on one device; send the newest", MaxOOMEvents)
		}
		ev, err := r.oomEvent()
		if err != nil {
			return nil, err
		}
		evs = append(evs, ev)
	}
}

// oomEvent reads the members of one event, whose '{' element has read.
func (r *reader) oomEvent() (OOMEvent, *RejectError) {
	var ev OOMEvent
	var seen field
	for {
		f, more, err := r.member(oomFields, &seen, "an OOM event")
		if err != nil {
			return ev, err
		}
		if !more {
			break
		}
		switch f {
		case fSeq:
			ev.Seq, _, err = r.uint("seq", false)
		case fSource:
			ev.Source, err = r.oomSource()
		case fRequested:
			ev.Requested, err = r.optional("requested")
		case fDeviceFree:
			ev.DeviceFree, err = r.optional("device_free")
		case fDeviceLimit:
			ev.DeviceLimit, err = r.optional("device_limit")
		case fAllocated:
			ev.Allocated, err = r.optional("allocated")
		case fReserved:
			ev.Reserved, err = r.optional("reserved")
		case fInactiveSplit:
			ev.InactiveSplit, err = r.optional("inactive_split")
		case fLargestFreeBlock:
			ev.LargestFreeBlock, err = r.optional("largest_free_block")
		default:
			err = r.skip()
		}
		if err != nil {
			return ev, err
		}
	}
	if seen&fSeq == 0 {
		return ev, reject(ReasonSchema, `OOM event without required field "seq"`)
	}
	if ev.Seq == 0 {
		return ev, reject(ReasonInvalidOOMEvent, "OOM event seq must start at 1")
	}
	if ev.Allocated.Set && ev.Reserved.Set && ev.Allocated.Value > ev.Reserved.Value {
		return ev, reject(ReasonInvalidOOMEvent, "OOM event %d has allocated %d > reserved %d", ev.Seq, ev.Allocated.Value, ev.Reserved.Value)
	}
	return ev, nil
}

func (r *reader) oomSource() (string, *RejectError) {
	s, null, err := r.str("source", true)
	if err != nil || null {
		return "", err
	}
	switch string(s) {
	case OOMSourceObserver:
		return OOMSourceObserver, nil
	case OOMSourceCounter:
		return OOMSourceCounter, nil
	}
	return "", reject(ReasonInvalidOOMEvent, "OOM event source %s must be %q or %q", quote(string(s)), OOMSourceObserver, OOMSourceCounter)
}

// checkOOMEvents enforces what needs the whole device: events come with oom_seq, in
// rising order, none beyond it. The daemon counts each seq once, so a sender that
// repeated or reordered them would make it guess.
func checkOOMEvents(dev Device) *RejectError {
	if len(dev.OOMEvents) == 0 {
		return nil
	}
	if !dev.OOMSeq.Set {
		return reject(ReasonInvalidOOMEvent, "device %s has oom_events without oom_seq", quote(dev.UUID))
	}
	var prev uint64
	for _, ev := range dev.OOMEvents {
		if ev.Seq <= prev {
			return reject(ReasonInvalidOOMEvent, "OOM events of device %s must have rising seq (%d after %d)", quote(dev.UUID), ev.Seq, prev)
		}
		if ev.Seq > dev.OOMSeq.Value {
			return reject(ReasonInvalidOOMEvent, "OOM event seq %d is above the device's oom_seq %d", ev.Seq, dev.OOMSeq.Value)
		}
		prev = ev.Seq
	}
	return nil
}

var phasePattern = fmt.Sprintf("^[a-z][a-z0-9_]{0,%d}$", MaxPhaseBytes-1)

func (r *reader) phasePeaks() ([]PhasePeak, *RejectError) {
	null, err := r.open(jsontext.KindBeginArray, "phase_peaks", true)
	if err != nil || null {
		return nil, err
	}
	var out []PhasePeak
	for {
		more, err := r.element(jsontext.KindBeginObject, "phase_peaks[]")
		if err != nil {
			return nil, err
		}
		if !more {
			return out, nil
		}
		if len(out) == MaxPhases {
			return nil, reject(ReasonInvalidPhase, "more than %d phases on one device", MaxPhases)
		}
		var ph PhasePeak
		var seen field
		for {
			f, more, err := r.member(phaseFields, &seen, "a phase peak")
			if err != nil {
				return nil, err
			}
			if !more {
				break
			}
			switch f {
			case fPhase:
				var s []byte
				if s, _, err = r.str("phase", false); err == nil {
					if !validAllocatorKey(s) || len(s) > MaxPhaseBytes {
						err = reject(ReasonInvalidPhase, "phase %s must match %s", quote(string(s)), phasePattern)
					}
					ph.Phase = string(s)
				}
			case fPeakAllocated:
				ph.PeakAllocated, _, err = r.uint("peak_allocated", false)
			default:
				err = r.skip()
			}
			if err != nil {
				return nil, err
			}
		}
		if seen&fPhase == 0 || seen&fPeakAllocated == 0 {
			return nil, reject(ReasonSchema, `phase peak without required field "phase" or "peak_allocated"`)
		}
		for _, o := range out {
			if o.Phase == ph.Phase {
				return nil, reject(ReasonInvalidPhase, "phase %s appears twice", quote(ph.Phase))
			}
		}
		out = append(out, ph)
	}
}

func (r *reader) trtEngines() ([]TRTEngine, *RejectError) {
	null, err := r.open(jsontext.KindBeginArray, "trt_engines", true)
	if err != nil || null {
		return nil, err
	}
	var out []TRTEngine
	for {
		more, err := r.element(jsontext.KindBeginObject, "trt_engines[]")
		if err != nil {
			return nil, err
		}
		if !more {
			return out, nil
		}
		if len(out) == MaxTRTEngines {
			return nil, reject(ReasonInvalidTRTEngine, "more than %d TensorRT engines on one device", MaxTRTEngines)
		}
		var e TRTEngine
		var seen field
		for {
			f, more, err := r.member(engineFields, &seen, "a TensorRT engine")
			if err != nil {
				return nil, err
			}
			if !more {
				break
			}
			switch f {
			case fEngine:
				var s []byte
				if s, _, err = r.str("engine", false); err == nil {
					if !validPoolName(s) {
						err = reject(ReasonInvalidTRTEngine, "engine %s must match %s", quote(string(s)), poolNamePattern)
					}
					e.Engine = string(s)
				}
			case fContexts:
				e.Contexts, _, err = r.uint("contexts", false)
			case fContextBytes:
				e.ContextBytes, err = r.optional("context_bytes")
			case fHeldBytes:
				e.HeldBytes, err = r.optional("held_bytes")
			case fWeightsBytes:
				e.WeightsBytes, err = r.optional("weights_bytes")
			case fStreamableBytes:
				e.StreamableBytes, err = r.optional("streamable_bytes")
			case fStreamingBudgetBytes:
				e.StreamingBudgetBytes, err = r.optional("streaming_budget_bytes")
			default:
				err = r.skip()
			}
			if err != nil {
				return nil, err
			}
		}
		if seen&fEngine == 0 || seen&fContexts == 0 {
			return nil, reject(ReasonSchema, `TensorRT engine without required field "engine" or "contexts"`)
		}
		for _, o := range out {
			if o.Engine == e.Engine {
				return nil, reject(ReasonInvalidTRTEngine, "engine %s appears twice", quote(e.Engine))
			}
		}
		out = append(out, e)
	}
}
