package push

import (
	"bytes"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// The v1 schema of docs/protocol.md, walked over the reader in one pass: each function
// reads one object of the protocol, checks each field as it is read and what needs the
// whole object when the object closes, and stops at the first problem.

// Patterns and texts in reject details, built from the limits so they cannot drift.
var (
	versionText      = strconv.Itoa(Version)
	runtimePattern   = fmt.Sprintf("^[a-z0-9][a-z0-9_.-]{0,%d}$", MaxRuntimeBytes-1)
	labelNamePattern = fmt.Sprintf("^[a-zA-Z_][a-zA-Z0-9_]{0,%d}$", MaxLabelNameBytes-1)
	labelNameLength  = fmt.Sprintf("must be 1 to %d bytes", MaxLabelNameBytes)
	poolNamePattern  = fmt.Sprintf("^[a-zA-Z0-9][a-zA-Z0-9_.:-]{0,%d}$", MaxPoolNameBytes-1)
)

// field is a known field of the protocol, as a bit, so that an object can note which it
// has seen: the one way a repeated field is refused and a missing one found.
type field uint

const (
	fV field = 1 << iota
	fRuntime
	fRuntimeVersion
	fLabels
	fClientDropped
	fRequestsInFlight
	fDevices

	fUUID
	fPools

	fName
	fParent
	fAllocated
	fReserved
	fPeakAllocated
	fActive
	fInactiveSplit
	fLimit
	fAllocRetries
	fOOMs

	fAllocator
	fOOMSeq
	fOOMEvents
	fSeq
	fSource
	fRequested
	fDeviceFree
	fDeviceLimit
	fLargestFreeBlock
	fPhasePeaks
	fPhase
	fTRTEngines
	fEngine
	fContexts
	fContextBytes
	fHeldBytes
	fWeightsBytes
	fStreamableBytes
	fStreamingBudgetBytes

	messageFields = fV | fRuntime | fRuntimeVersion | fLabels | fClientDropped | fRequestsInFlight | fDevices | fAllocator
	deviceFields  = fUUID | fPools | fOOMSeq | fOOMEvents | fPhasePeaks | fTRTEngines
	engineFields  = fEngine | fContexts | fContextBytes | fHeldBytes | fWeightsBytes | fStreamableBytes | fStreamingBudgetBytes
	phaseFields   = fPhase | fPeakAllocated
	oomFields     = fSeq | fSource | fRequested | fDeviceFree | fDeviceLimit | fAllocated | fReserved |
		fInactiveSplit | fLargestFreeBlock
	poolFields = fName | fParent | fAllocated | fReserved | fPeakAllocated | fActive |
		fInactiveSplit | fLimit | fAllocRetries | fOOMs
)

// fieldOf returns the bit of a known field name, 0 for any other. An object treats a
// known name of another object as unknown.
func fieldOf(name []byte) field {
	switch string(name) {
	case "v":
		return fV
	case "runtime":
		return fRuntime
	case "runtime_version":
		return fRuntimeVersion
	case "labels":
		return fLabels
	case "client_dropped":
		return fClientDropped
	case "requests_in_flight":
		return fRequestsInFlight
	case "devices":
		return fDevices
	case "uuid":
		return fUUID
	case "pools":
		return fPools
	case "name":
		return fName
	case "parent":
		return fParent
	case "allocated":
		return fAllocated
	case "reserved":
		return fReserved
	case "peak_allocated":
		return fPeakAllocated
	case "active":
		return fActive
	case "inactive_split":
		return fInactiveSplit
	case "limit":
		return fLimit
	case "alloc_retries":
		return fAllocRetries
	case "ooms":
		return fOOMs
	case "allocator":
		return fAllocator
	case "oom_seq":
		return fOOMSeq
	case "oom_events":
		return fOOMEvents
	case "seq":
		return fSeq
	case "source":
		return fSource
	case "requested":
		return fRequested
	case "device_free":
		return fDeviceFree
	case "device_limit":
		return fDeviceLimit
	case "largest_free_block":
		return fLargestFreeBlock
	case "phase_peaks":
		return fPhasePeaks
	case "phase":
		return fPhase
	case "trt_engines":
		return fTRTEngines
	case "engine":
		return fEngine
	case "contexts":
		return fContexts
	case "context_bytes":
		return fContextBytes
	case "held_bytes":
		return fHeldBytes
	case "weights_bytes":
		return fWeightsBytes
	case "streamable_bytes":
		return fStreamableBytes
	case "streaming_budget_bytes":
		return fStreamingBudgetBytes
	}
	return 0
}

// member reads the next name of an object with the fields known, notes it in seen and
// returns its field: 0 for a name the object does not know, whose value the caller
// skips. It refuses a known field seen before: a repeated name is valid JSON (RFC 8259
// says only that names SHOULD be unique), but which of two values counts would be a
// guess.
func (r *reader) member(known field, seen *field, in string) (f field, more bool, err *RejectError) {
	name, more, err := r.name()
	if err != nil || !more {
		return 0, more, err
	}
	f = fieldOf(name) & known
	if *seen&f != 0 {
		return 0, false, reject(ReasonSchema, "field %s appears twice in %s", quote(string(name)), in)
	}
	*seen |= f
	return f, true, nil
}

func unsupportedVersion(v []byte) *RejectError {
	return reject(ReasonUnsupportedVersion, "protocol version %s; this daemon speaks version %s", quote(string(v)), versionText)
}

func (r *reader) message() (Message, *RejectError) {
	var m Message
	if _, err := r.open(jsontext.KindBeginObject, "a message", false); err != nil {
		return m, err
	}
	var seen field
	for {
		f, more, err := r.member(messageFields, &seen, "the message")
		if err != nil {
			return Message{}, err
		}
		if !more {
			break
		}
		switch f {
		case fV:
			var v []byte
			if v, _, err = r.value(jsontext.KindNumber, "v", false); err == nil && string(v) != versionText {
				err = unsupportedVersion(v)
			}
			m.V = Version
		case fRuntime:
			m.Runtime, err = r.runtime()
		case fRuntimeVersion:
			m.RuntimeVersion, err = r.runtimeVersion()
		case fLabels:
			m.Labels, err = r.labels()
		case fClientDropped:
			m.ClientDropped, _, err = r.uint("client_dropped", true)
		case fRequestsInFlight:
			m.RequestsInFlight, err = r.requestsInFlight()
		case fDevices:
			m.Devices, err = r.devices()
		case fAllocator:
			m.Allocator, err = r.allocator()
		default:
			err = r.skip()
		}
		if err != nil {
			return Message{}, err
		}
	}
	if err := r.end(); err != nil {
		return Message{}, err
	}
	for _, f := range [...]struct {
		bit  field
		name string
	}{{fV, "v"}, {fRuntime, "runtime"}, {fDevices, "devices"}} {
		if seen&f.bit == 0 {
			return Message{}, reject(ReasonSchema, "missing required field %q", f.name)
		}
	}
	return m, nil
}

// requestsInFlight reads the optional load signal, an integer in [0, MaxRequestsInFlight].
func (r *reader) requestsInFlight() (Optional, *RejectError) {
	v, null, err := r.uintUpTo("requests_in_flight", true, MaxRequestsInFlight)
	if err != nil || null {
		return Optional{}, err
	}
	return Optional{Value: v, Set: true}, nil
}

func (r *reader) runtime() (string, *RejectError) {
	s, _, err := r.str("runtime", false)
	if err != nil {
		return "", err
	}
	if !validRuntime(s) {
		return "", reject(ReasonInvalidRuntime, "runtime %s must match %s", quote(string(s)), runtimePattern)
	}
	return string(s), nil
}

func (r *reader) runtimeVersion() (string, *RejectError) {
	s, null, err := r.str("runtime_version", true)
	if err != nil || null {
		return "", err
	}
	if len(s) > MaxRuntimeVersionBytes || !printable(s) {
		return "", reject(ReasonInvalidRuntime, "runtime_version %s must be at most %d bytes of printable text", quote(string(s)), MaxRuntimeVersionBytes)
	}
	return string(s), nil
}

func (r *reader) labels() (map[string]string, *RejectError) {
	null, err := r.open(jsontext.KindBeginObject, "labels", true)
	if err != nil || null {
		return nil, err
	}
	var labels map[string]string
	for {
		key, more, err := r.name()
		if err != nil {
			return nil, err
		}
		if !more {
			return labels, nil
		}
		if len(labels) == MaxLabels {
			return nil, reject(ReasonTooManyLabels, "more than %d labels", MaxLabels)
		}
		if why := labelNameProblem(key); why != "" {
			return nil, reject(ReasonInvalidLabel, "label name %s %s", quote(string(key)), why)
		}
		name := string(key)
		if _, dup := labels[name]; dup {
			return nil, reject(ReasonInvalidLabel, "label %s appears twice", quote(name))
		}
		k, raw, err := r.next()
		if err != nil {
			return nil, err
		}
		if k != jsontext.KindString {
			return nil, mistyped(jsontext.KindString, "label "+name, k)
		}
		v := unquote(&r.strBuf, raw)
		if len(v) == 0 || len(v) > MaxLabelValueBytes {
			return nil, reject(ReasonInvalidLabel, "label %s value must be 1 to %d bytes, not %d", quote(name), MaxLabelValueBytes, len(v))
		}
		if labels == nil {
			labels = make(map[string]string, 4)
		}
		labels[name] = string(v)
	}
}

func (r *reader) devices() ([]Device, *RejectError) {
	if _, err := r.open(jsontext.KindBeginArray, "devices", false); err != nil {
		return nil, err
	}
	devs := r.devBuf[:0]
	for n := 0; ; n++ {
		more, err := r.element(jsontext.KindBeginObject, "devices[]")
		if err != nil {
			return nil, err
		}
		if !more {
			r.devBuf = devs
			return exact(devs), nil
		}
		if n == MaxDevices {
			return nil, reject(ReasonTooManyDevices, "more than %d devices", MaxDevices)
		}
		dev, err := r.device()
		if err != nil {
			return nil, err
		}
		for _, o := range devs {
			if o.UUID == dev.UUID {
				return nil, reject(ReasonInvalidUUID, "device %s appears twice", quote(dev.UUID))
			}
		}
		devs = append(devs, dev)
	}
}

// device reads the members of a device, whose '{' element has read.
func (r *reader) device() (Device, *RejectError) {
	var dev Device
	var seen field
	for {
		f, more, err := r.member(deviceFields, &seen, "a device")
		if err != nil {
			return dev, err
		}
		if !more {
			break
		}
		switch f {
		case fUUID:
			dev.UUID, err = r.uuid()
		case fPools:
			dev.Pools, err = r.pools()
		case fOOMSeq:
			dev.OOMSeq, err = r.optional("oom_seq")
		case fOOMEvents:
			dev.OOMEvents, err = r.oomEvents()
		case fPhasePeaks:
			dev.PhasePeaks, err = r.phasePeaks()
		case fTRTEngines:
			dev.TRTEngines, err = r.trtEngines()
		default:
			err = r.skip()
		}
		if err != nil {
			return dev, err
		}
	}
	if seen&fUUID == 0 {
		return dev, reject(ReasonSchema, `device without required field "uuid"`)
	}
	if seen&fPools == 0 {
		return dev, reject(ReasonSchema, `device %s without required field "pools"`, quote(dev.UUID))
	}
	if err := checkOOMEvents(dev); err != nil {
		return dev, err
	}
	return dev, checkPools(dev)
}

func (r *reader) uuid() (string, *RejectError) {
	s, _, err := r.str("uuid", false)
	if err != nil {
		return "", err
	}
	if !validUUID(s) {
		return "", reject(ReasonInvalidUUID, "uuid %s must be an NVML UUID (GPU-… or MIG-…, at most %d bytes)", quote(string(s)), MaxUUIDBytes)
	}
	return string(s), nil
}

func (r *reader) pools() ([]Pool, *RejectError) {
	if _, err := r.open(jsontext.KindBeginArray, "pools", false); err != nil {
		return nil, err
	}
	pools := r.poolBuf[:0]
	for n := 0; ; n++ {
		more, err := r.element(jsontext.KindBeginObject, "pools[]")
		if err != nil {
			return nil, err
		}
		if !more {
			r.poolBuf = pools
			return exact(pools), nil
		}
		if n == MaxPools {
			return nil, reject(ReasonTooManyPools, "more than %d pools on one device", MaxPools)
		}
		p, err := r.pool()
		if err != nil {
			return nil, err
		}
		pools = append(pools, p)
	}
}

// exact copies what was gathered in a reader's scratch slice into one allocation of the
// right size (nil when empty), rather than the several of growing a slice by append.
func exact[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return append(make([]T, 0, len(s)), s...)
}

// checkPools enforces what needs the whole device: unique names, and parents that exist,
// are not the pool itself and are top-level (one level of nesting keeps totals simple).
func checkPools(dev Device) *RejectError {
	for i, p := range dev.Pools {
		for _, q := range dev.Pools[:i] {
			if q.Name == p.Name {
				return reject(ReasonInvalidPool, "pool %s appears twice on device %s", quote(p.Name), quote(dev.UUID))
			}
		}
	}
	for _, p := range dev.Pools {
		if p.Parent == "" {
			continue
		}
		if p.Parent == p.Name {
			return reject(ReasonInvalidPool, "pool %s names itself as parent", quote(p.Name))
		}
		found := false
		for _, q := range dev.Pools {
			if q.Name == p.Parent {
				if q.Parent != "" {
					return reject(ReasonInvalidPool, "pool %s has parent %s, which itself has a parent", quote(p.Name), quote(q.Name))
				}
				found = true
				break
			}
		}
		if !found {
			return reject(ReasonInvalidPool, "pool %s has parent %s, which is not a pool of device %s", quote(p.Name), quote(p.Parent), quote(dev.UUID))
		}
	}
	return nil
}

// pool reads the members of a pool, whose '{' element has read.
func (r *reader) pool() (Pool, *RejectError) {
	var p Pool
	var seen field
	for {
		f, more, err := r.member(poolFields, &seen, "a pool")
		if err != nil {
			return p, err
		}
		if !more {
			break
		}
		switch f {
		case fName:
			p.Name, err = r.poolName("pool name", false)
		case fParent:
			p.Parent, err = r.poolName("pool parent", true)
		case fAllocated:
			p.Allocated, _, err = r.uint("allocated", false)
		case fReserved:
			p.Reserved, _, err = r.uint("reserved", false)
		case fPeakAllocated:
			p.PeakAllocated, err = r.optional("peak_allocated")
		case fActive:
			p.Active, err = r.optional("active")
		case fInactiveSplit:
			p.InactiveSplit, err = r.optional("inactive_split")
		case fLimit:
			p.Limit, err = r.optional("limit")
		case fAllocRetries:
			p.AllocRetries, err = r.optional("alloc_retries")
		case fOOMs:
			p.OOMs, err = r.optional("ooms")
		default:
			err = r.skip()
		}
		if err != nil {
			return p, err
		}
	}
	for _, f := range [...]struct {
		bit  field
		name string
	}{{fName, "name"}, {fAllocated, "allocated"}, {fReserved, "reserved"}} {
		if seen&f.bit == 0 {
			return p, reject(ReasonSchema, "pool %s without required field %q", quote(p.Name), f.name)
		}
	}
	if p.Allocated > p.Reserved {
		return p, reject(ReasonInvalidPool, "pool %s has allocated %d > reserved %d", quote(p.Name), p.Allocated, p.Reserved)
	}
	return p, nil
}

func (r *reader) poolName(field string, nullOK bool) (string, *RejectError) {
	s, null, err := r.str(field, nullOK)
	if err != nil || null {
		return "", err
	}
	if !validPoolName(s) {
		return "", reject(ReasonInvalidPool, "%s %s must match %s", field, quote(string(s)), poolNamePattern)
	}
	return string(s), nil
}

// optional reads a byte or counter field a runtime may leave out or send as null.
func (r *reader) optional(field string) (Optional, *RejectError) {
	v, null, err := r.uint(field, true)
	if err != nil || null {
		return Optional{}, err
	}
	return Optional{Value: v, Set: true}, nil
}

func validRuntime(s []byte) bool {
	if len(s) == 0 || len(s) > MaxRuntimeBytes {
		return false
	}
	for i, c := range s {
		lowerDigit := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !lowerDigit && (i == 0 || c != '_' && c != '.' && c != '-') {
			return false
		}
	}
	return true
}

func printable(s []byte) bool {
	for len(s) > 0 {
		r, n := utf8.DecodeRune(s)
		if !strconv.IsPrint(r) {
			return false
		}
		s = s[n:]
	}
	return true
}

// reservedLabel reports the label names the daemon itself puts on push series.
func reservedLabel(s string) bool {
	switch s {
	case "pid", "uuid", "gpu", "pool", "parent", "runtime", "runtime_version", "series",
		"window", "verdict", "reason", "comm", "container_id", "pod_uid", "instance", "job":
		return true
	}
	return false
}

// labelNameProblem says what is wrong with a label name, or "" when nothing is.
func labelNameProblem(s []byte) string {
	if len(s) == 0 || len(s) > MaxLabelNameBytes {
		return labelNameLength
	}
	for i, c := range s {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || i > 0 && c >= '0' && c <= '9'
		if !ok {
			return "must match " + labelNamePattern
		}
	}
	if len(s) >= 2 && s[0] == '_' && s[1] == '_' {
		return "must not start with __ (reserved by Prometheus)"
	}
	if reservedLabel(string(s)) {
		return "is reserved for labels the daemon sets itself"
	}
	return ""
}

func validUUID(s []byte) bool {
	if len(s) > MaxUUIDBytes || len(s) < 5 {
		return false
	}
	if !bytes.HasPrefix(s, []byte("GPU-")) && !bytes.HasPrefix(s, []byte("MIG-")) {
		return false
	}
	for _, c := range s[4:] {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '/' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func validPoolName(s []byte) bool {
	if len(s) == 0 || len(s) > MaxPoolNameBytes {
		return false
	}
	for i, c := range s {
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '_' && c != '.' && c != ':' && c != '-') {
			return false
		}
	}
	return true
}
