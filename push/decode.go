package push

import (
	"bytes"
	"strconv"
	"unicode/utf8"
)

// Decode parses and validates one message. It is a hand-rolled scanner rather than
// encoding/json because the daemon must tell a syntax error (invalid_json) from a wrong
// type (schema) from a bad number (invalid_bytes), must refuse duplicate fields, and must
// stay cheap under a flood: one pass, no reflection, no intermediate tree.
//
// When a message has several problems the reason is chosen as docs/protocol.md says:
// invalid_json first, then unsupported_version, then the first problem in document order.
// Every error it returns is a *RejectError.
func Decode(b []byte) (Message, error) {
	d := decoder{b: b}
	m, err := d.message()
	if err == nil {
		return m, nil
	}
	if err.Reason != ReasonInvalidJSON {
		// The scanner stopped at the first problem; a syntax error further on still wins,
		// and so does a wrong version anywhere, because then the rest of the schema may
		// legitimately differ.
		if serr := syntaxCheck(b); serr != nil {
			return Message{}, serr
		}
		if err.Reason != ReasonUnsupportedVersion {
			if v, ok := findVersion(b); ok && v != "1" {
				return Message{}, reject(ReasonUnsupportedVersion, "protocol version %s; this daemon speaks version 1", quote(v))
			}
		}
	}
	return Message{}, err
}

type decoder struct {
	b       []byte
	i       int
	scratch []byte // unescaped string when it had escapes; reused
}

func (d *decoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *decoder) syntax(what string) *RejectError {
	if d.i >= len(d.b) {
		return reject(ReasonInvalidJSON, "message ends where %s was expected", what)
	}
	return reject(ReasonInvalidJSON, "expected %s at byte %d, found %q", what, d.i, d.b[d.i])
}

// kind of the JSON value starting at d.i, or 0 when no value can start there.
func (d *decoder) kind() byte {
	if d.i >= len(d.b) {
		return 0
	}
	switch c := d.b[d.i]; c {
	case '{', '[', '"', 't', 'f', 'n':
		return c
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return '0'
	}
	return 0
}

func kindName(k byte) string {
	switch k {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// expect positions the decoder on a value of kind want for field. It reports null=true
// (and consumes the null) when the value is null and nullOK; any other kind is a schema
// error, and no value at all a syntax error.
func (d *decoder) expect(want byte, field string, nullOK bool) (null bool, err *RejectError) {
	d.ws()
	k := d.kind()
	if k == want {
		return false, nil
	}
	if k == 0 {
		return false, d.syntax("a value")
	}
	if k == 'n' && nullOK {
		return true, d.literal("null")
	}
	var w string
	switch want {
	case '{':
		w = "an object"
	case '[':
		w = "an array"
	case '"':
		w = "a string"
	default:
		w = "an integer"
	}
	return false, reject(ReasonSchema, "%s must be %s, not %s", field, w, kindName(k))
}

func (d *decoder) literal(lit string) *RejectError {
	if !bytes.HasPrefix(d.b[d.i:], []byte(lit)) {
		return d.syntax(lit)
	}
	d.i += len(lit)
	return nil
}

// object walks the members of the object at d.i, calling fn with d.i on each value. The
// key slice is only valid until the next string is read.
func (d *decoder) object(fn func(key []byte) *RejectError) *RejectError {
	d.i++ // '{'
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == '}' {
		d.i++
		return nil
	}
	for {
		d.ws()
		if d.i >= len(d.b) || d.b[d.i] != '"' {
			return d.syntax("a string key")
		}
		key, err := d.str()
		if err != nil {
			return err
		}
		d.ws()
		if d.i >= len(d.b) || d.b[d.i] != ':' {
			return d.syntax("':'")
		}
		d.i++
		d.ws()
		if err := fn(key); err != nil {
			return err
		}
		d.ws()
		if d.i < len(d.b) {
			switch d.b[d.i] {
			case ',':
				d.i++
				continue
			case '}':
				d.i++
				return nil
			}
		}
		return d.syntax("',' or '}'")
	}
}

// array walks the elements of the array at d.i, calling fn with d.i on each element.
func (d *decoder) array(fn func(n int) *RejectError) *RejectError {
	d.i++ // '['
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == ']' {
		d.i++
		return nil
	}
	for n := 0; ; n++ {
		d.ws()
		if err := fn(n); err != nil {
			return err
		}
		d.ws()
		if d.i < len(d.b) {
			switch d.b[d.i] {
			case ',':
				d.i++
				continue
			case ']':
				d.i++
				return nil
			}
		}
		return d.syntax("',' or ']'")
	}
}

// str reads the string at d.i (which must be '"'). The result aliases the input when the
// string has no escapes and the scratch buffer otherwise; it is only valid until the next
// call. Raw control characters and invalid UTF-8 are syntax errors: JSON is UTF-8 text.
func (d *decoder) str() ([]byte, *RejectError) {
	start := d.i + 1
	ascii := true
	for j := start; j < len(d.b); j++ {
		c := d.b[j]
		switch {
		case c == '"':
			s := d.b[start:j]
			if !ascii && !utf8.Valid(s) {
				d.i = start
				return nil, reject(ReasonInvalidJSON, "string at byte %d is not valid UTF-8", start)
			}
			d.i = j + 1
			return s, nil
		case c == '\\':
			return d.strSlow(start, j)
		case c < 0x20:
			d.i = j
			return nil, d.syntax("no raw control character in a string")
		case c >= 0x80:
			ascii = false
		}
	}
	d.i = len(d.b)
	return nil, d.syntax("'\"'")
}

func (d *decoder) strSlow(start, j int) ([]byte, *RejectError) {
	out := append(d.scratch[:0], d.b[start:j]...)
	for j < len(d.b) {
		c := d.b[j]
		switch {
		case c == '"':
			d.i = j + 1
			d.scratch = out
			if !utf8.Valid(out) {
				return nil, reject(ReasonInvalidJSON, "string at byte %d is not valid UTF-8", start)
			}
			return out, nil
		case c < 0x20:
			d.i = j
			return nil, d.syntax("no raw control character in a string")
		case c != '\\':
			out = append(out, c)
			j++
			continue
		}
		j++
		if j >= len(d.b) {
			break
		}
		e := d.b[j]
		j++
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(d.b, j)
			if !ok {
				d.i = j
				return nil, d.syntax("4 hex digits after \\u")
			}
			j += 4
			if r >= 0xD800 && r < 0xDC00 {
				// A high surrogate pairs with a following \uDC00-\uDFFF; a lone one
				// becomes U+FFFD, as encoding/json does.
				if j+6 <= len(d.b) && d.b[j] == '\\' && d.b[j+1] == 'u' {
					if r2, ok := hex4(d.b, j+2); ok && r2 >= 0xDC00 && r2 < 0xE000 {
						r = 0x10000 + (r-0xD800)<<10 + (r2 - 0xDC00)
						j += 6
					}
				}
			}
			if r >= 0xD800 && r < 0xE000 {
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
		default:
			d.i = j - 1
			return nil, d.syntax("a valid escape")
		}
	}
	d.i = len(d.b)
	return nil, d.syntax("'\"'")
}

func hex4(b []byte, j int) (rune, bool) {
	if j+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[j : j+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// number scans the JSON number at d.i and returns its text, checking the JSON grammar
// (a malformed number is invalid_json) and whether it is a plain non-negative integer.
func (d *decoder) number() (tok []byte, plain bool, err *RejectError) {
	start := d.i
	plain = true
	if d.i < len(d.b) && d.b[d.i] == '-' {
		plain = false
		d.i++
	}
	switch {
	case d.i < len(d.b) && d.b[d.i] == '0':
		d.i++
	case d.i < len(d.b) && d.b[d.i] >= '1' && d.b[d.i] <= '9':
		for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
			d.i++
		}
	default:
		return nil, false, d.syntax("a digit")
	}
	if d.i < len(d.b) && d.b[d.i] == '.' {
		plain = false
		d.i++
		if d.i >= len(d.b) || d.b[d.i] < '0' || d.b[d.i] > '9' {
			return nil, false, d.syntax("a digit after '.'")
		}
		for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
			d.i++
		}
	}
	if d.i < len(d.b) && (d.b[d.i] == 'e' || d.b[d.i] == 'E') {
		plain = false
		d.i++
		if d.i < len(d.b) && (d.b[d.i] == '+' || d.b[d.i] == '-') {
			d.i++
		}
		if d.i >= len(d.b) || d.b[d.i] < '0' || d.b[d.i] > '9' {
			return nil, false, d.syntax("a digit in the exponent")
		}
		for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
			d.i++
		}
	}
	return d.b[start:d.i], plain, nil
}

// uint reads a byte or counter field: a JSON integer in [0, MaxValue]. null=true means
// the value was null (only when nullOK).
func (d *decoder) uint(field string, nullOK bool) (v uint64, null bool, err *RejectError) {
	null, err = d.expect('0', field, nullOK)
	if err != nil || null {
		return 0, null, err
	}
	tok, plain, err := d.number()
	if err != nil {
		return 0, false, err
	}
	// 2^50 has 16 digits; anything longer is out of range without parsing.
	if !plain || len(tok) > 16 {
		return 0, false, reject(ReasonInvalidBytes, "%s must be an integer from 0 to 2^50, not %s", field, quote(string(tok)))
	}
	for _, c := range tok {
		v = v*10 + uint64(c-'0')
	}
	if v > MaxValue {
		return 0, false, reject(ReasonInvalidBytes, "%s must be an integer from 0 to 2^50, not %s", field, quote(string(tok)))
	}
	return v, false, nil
}

// skip passes over any JSON value (an unknown field), checking its syntax. It keeps its
// own stack so a deeply nested value cannot grow the goroutine stack.
func (d *decoder) skip() *RejectError {
	var stackBuf [32]byte
	stack := stackBuf[:0]
	for {
		// A value is expected at d.i.
		d.ws()
		switch d.kind() {
		case 0:
			return d.syntax("a value")
		case '{':
			d.i++
			d.ws()
			if d.i < len(d.b) && d.b[d.i] == '}' {
				d.i++
				break
			}
			stack = append(stack, '{')
			if err := d.key(); err != nil {
				return err
			}
			continue
		case '[':
			d.i++
			d.ws()
			if d.i < len(d.b) && d.b[d.i] == ']' {
				d.i++
				break
			}
			stack = append(stack, '[')
			continue
		case '"':
			if _, err := d.str(); err != nil {
				return err
			}
		case 't':
			if err := d.literal("true"); err != nil {
				return err
			}
		case 'f':
			if err := d.literal("false"); err != nil {
				return err
			}
		case 'n':
			if err := d.literal("null"); err != nil {
				return err
			}
		default:
			if _, _, err := d.number(); err != nil {
				return err
			}
		}
		// A value ended: close containers until one continues or the stack is empty.
		for {
			if len(stack) == 0 {
				return nil
			}
			d.ws()
			top := stack[len(stack)-1]
			if d.i < len(d.b) && d.b[d.i] == ',' {
				d.i++
				if top == '{' {
					if err := d.key(); err != nil {
						return err
					}
				}
				break
			}
			if d.i < len(d.b) && (top == '{' && d.b[d.i] == '}' || top == '[' && d.b[d.i] == ']') {
				d.i++
				stack = stack[:len(stack)-1]
				continue
			}
			if top == '{' {
				return d.syntax("',' or '}'")
			}
			return d.syntax("',' or ']'")
		}
	}
}

// key reads `"name":` inside an object being skipped.
func (d *decoder) key() *RejectError {
	d.ws()
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		return d.syntax("a string key")
	}
	if _, err := d.str(); err != nil {
		return err
	}
	d.ws()
	if d.i >= len(d.b) || d.b[d.i] != ':' {
		return d.syntax("':'")
	}
	d.i++
	return nil
}

// syntaxCheck reports an invalid_json error if b is not exactly one UTF-8 JSON value.
func syntaxCheck(b []byte) *RejectError {
	d := decoder{b: b}
	if err := d.skip(); err != nil {
		return err
	}
	d.ws()
	if d.i != len(b) {
		return d.syntax("the end of the message")
	}
	return nil
}

// findVersion returns the text of the top-level "v" number, if there is one.
func findVersion(b []byte) (string, bool) {
	d := decoder{b: b}
	d.ws()
	if d.kind() != '{' {
		return "", false
	}
	var v string
	var found bool
	err := d.object(func(key []byte) *RejectError {
		if string(key) == "v" && d.kind() == '0' && !found {
			tok, _, err := d.number()
			v, found = string(tok), true
			return err
		}
		return d.skip()
	})
	return v, found && err == nil
}

// Top-level and nested field bits, to refuse duplicates and find missing fields.
const (
	fV = 1 << iota
	fRuntime
	fRuntimeVersion
	fLabels
	fClientDropped
	fDevices
)

func (d *decoder) message() (Message, *RejectError) {
	var m Message
	d.ws()
	if d.i >= len(d.b) {
		return m, reject(ReasonInvalidJSON, "empty message")
	}
	if _, err := d.expect('{', "a message", false); err != nil {
		return m, err
	}
	var seen uint
	once := func(bit uint, key []byte) *RejectError {
		if seen&bit != 0 {
			return reject(ReasonSchema, "field %q appears twice", key)
		}
		seen |= bit
		return nil
	}
	err := d.object(func(key []byte) *RejectError {
		switch string(key) {
		case "v":
			if err := once(fV, key); err != nil {
				return err
			}
			if _, err := d.expect('0', "v", false); err != nil {
				return err
			}
			tok, _, err := d.number()
			if err != nil {
				return err
			}
			if string(tok) != "1" {
				return reject(ReasonUnsupportedVersion, "protocol version %s; this daemon speaks version 1", quote(string(tok)))
			}
			m.V = 1
		case "runtime":
			if err := once(fRuntime, key); err != nil {
				return err
			}
			if _, err := d.expect('"', "runtime", false); err != nil {
				return err
			}
			s, err := d.str()
			if err != nil {
				return err
			}
			if !validRuntime(s) {
				return reject(ReasonInvalidRuntime, "runtime %s must match ^[a-z0-9][a-z0-9_.-]{0,31}$", quote(string(s)))
			}
			m.Runtime = string(s)
		case "runtime_version":
			if err := once(fRuntimeVersion, key); err != nil {
				return err
			}
			null, err := d.expect('"', "runtime_version", true)
			if err != nil || null {
				return err
			}
			s, err := d.str()
			if err != nil {
				return err
			}
			if len(s) > MaxRuntimeVersionBytes || !printable(s) {
				return reject(ReasonInvalidRuntime, "runtime_version %s must be at most 64 bytes of printable text", quote(string(s)))
			}
			m.RuntimeVersion = string(s)
		case "labels":
			if err := once(fLabels, key); err != nil {
				return err
			}
			null, err := d.expect('{', "labels", true)
			if err != nil || null {
				return err
			}
			return d.labels(&m)
		case "client_dropped":
			if err := once(fClientDropped, key); err != nil {
				return err
			}
			v, _, err := d.uint("client_dropped", true)
			m.ClientDropped = v
			return err
		case "devices":
			if err := once(fDevices, key); err != nil {
				return err
			}
			if _, err := d.expect('[', "devices", false); err != nil {
				return err
			}
			return d.devices(&m)
		default:
			return d.skip()
		}
		return nil
	})
	if err != nil {
		return Message{}, err
	}
	d.ws()
	if d.i != len(d.b) {
		return Message{}, d.syntax("the end of the message")
	}
	switch {
	case seen&fV == 0:
		return Message{}, reject(ReasonSchema, `missing required field "v"`)
	case seen&fRuntime == 0:
		return Message{}, reject(ReasonSchema, `missing required field "runtime"`)
	case seen&fDevices == 0:
		return Message{}, reject(ReasonSchema, `missing required field "devices"`)
	}
	return m, nil
}

func (d *decoder) labels(m *Message) *RejectError {
	return d.object(func(key []byte) *RejectError {
		if len(m.Labels) == MaxLabels {
			return reject(ReasonTooManyLabels, "more than %d labels", MaxLabels)
		}
		if why := labelNameProblem(key); why != "" {
			return reject(ReasonInvalidLabel, "label name %s %s", quote(string(key)), why)
		}
		name := string(key)
		if _, dup := m.Labels[name]; dup {
			return reject(ReasonInvalidLabel, "label %s appears twice", quote(name))
		}
		if d.kind() != '"' {
			_, err := d.expect('"', "label "+name, false)
			return err
		}
		v, err := d.str()
		if err != nil {
			return err
		}
		if len(v) == 0 || len(v) > MaxLabelValueBytes {
			return reject(ReasonInvalidLabel, "label %s value must be 1 to %d bytes, not %d", quote(name), MaxLabelValueBytes, len(v))
		}
		if m.Labels == nil {
			m.Labels = make(map[string]string, 4)
		}
		m.Labels[name] = string(v)
		return nil
	})
}

func (d *decoder) devices(m *Message) *RejectError {
	return d.array(func(n int) *RejectError {
		if n == MaxDevices {
			return reject(ReasonTooManyDevices, "more than %d devices", MaxDevices)
		}
		if _, err := d.expect('{', "devices[]", false); err != nil {
			return err
		}
		dev, err := d.device()
		if err != nil {
			return err
		}
		for _, o := range m.Devices {
			if o.UUID == dev.UUID {
				return reject(ReasonInvalidUUID, "device %s appears twice", quote(dev.UUID))
			}
		}
		m.Devices = append(m.Devices, dev)
		return nil
	})
}

const (
	fUUID = 1 << iota
	fPools
)

func (d *decoder) device() (Device, *RejectError) {
	var dev Device
	var seen uint
	err := d.object(func(key []byte) *RejectError {
		switch string(key) {
		case "uuid":
			if seen&fUUID != 0 {
				return reject(ReasonSchema, `field "uuid" appears twice`)
			}
			seen |= fUUID
			if _, err := d.expect('"', "uuid", false); err != nil {
				return err
			}
			s, err := d.str()
			if err != nil {
				return err
			}
			if !validUUID(s) {
				return reject(ReasonInvalidUUID, "uuid %s must be an NVML UUID (GPU-… or MIG-…, at most 96 bytes)", quote(string(s)))
			}
			dev.UUID = string(s)
		case "pools":
			if seen&fPools != 0 {
				return reject(ReasonSchema, `field "pools" appears twice`)
			}
			seen |= fPools
			if _, err := d.expect('[', "pools", false); err != nil {
				return err
			}
			return d.array(func(n int) *RejectError {
				if n == MaxPools {
					return reject(ReasonTooManyPools, "more than %d pools on one device", MaxPools)
				}
				if _, err := d.expect('{', "pools[]", false); err != nil {
					return err
				}
				p, err := d.pool()
				if err != nil {
					return err
				}
				dev.Pools = append(dev.Pools, p)
				return nil
			})
		default:
			return d.skip()
		}
		return nil
	})
	if err != nil {
		return dev, err
	}
	if seen&fUUID == 0 {
		return dev, reject(ReasonSchema, `device without required field "uuid"`)
	}
	if seen&fPools == 0 {
		return dev, reject(ReasonSchema, `device %s without required field "pools"`, quote(dev.UUID))
	}
	return dev, checkPools(dev)
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

const (
	fName = 1 << iota
	fParent
	fAllocated
	fReserved
	fPeak
	fActive
	fInactiveSplit
	fLimit
	fRetries
	fOOMs
)

func (d *decoder) pool() (Pool, *RejectError) {
	var p Pool
	var seen uint
	opt := func(o *Optional, field string) *RejectError {
		v, null, err := d.uint(field, true)
		if err == nil && !null {
			*o = Optional{Value: v, Set: true}
		}
		return err
	}
	err := d.object(func(key []byte) *RejectError {
		var bit uint
		switch string(key) {
		case "name":
			bit = fName
		case "parent":
			bit = fParent
		case "allocated":
			bit = fAllocated
		case "reserved":
			bit = fReserved
		case "peak_allocated":
			bit = fPeak
		case "active":
			bit = fActive
		case "inactive_split":
			bit = fInactiveSplit
		case "limit":
			bit = fLimit
		case "alloc_retries":
			bit = fRetries
		case "ooms":
			bit = fOOMs
		default:
			return d.skip()
		}
		if seen&bit != 0 {
			return reject(ReasonSchema, "pool field %q appears twice", key)
		}
		seen |= bit
		var err *RejectError
		switch bit {
		case fName, fParent:
			field := "pool name"
			if bit == fParent {
				field = "pool parent"
			}
			null, err := d.expect('"', field, bit == fParent)
			if err != nil || null {
				return err
			}
			s, err := d.str()
			if err != nil {
				return err
			}
			if !validPoolName(s) {
				return reject(ReasonInvalidPool, "%s %s must match ^[a-zA-Z0-9][a-zA-Z0-9_.:-]{0,63}$", field, quote(string(s)))
			}
			if bit == fName {
				p.Name = string(s)
			} else {
				p.Parent = string(s)
			}
		case fAllocated:
			p.Allocated, _, err = d.uint("allocated", false)
		case fReserved:
			p.Reserved, _, err = d.uint("reserved", false)
		case fPeak:
			err = opt(&p.PeakAllocated, "peak_allocated")
		case fActive:
			err = opt(&p.Active, "active")
		case fInactiveSplit:
			err = opt(&p.InactiveSplit, "inactive_split")
		case fLimit:
			err = opt(&p.Limit, "limit")
		case fRetries:
			err = opt(&p.AllocRetries, "alloc_retries")
		case fOOMs:
			err = opt(&p.OOMs, "ooms")
		}
		return err
	})
	if err != nil {
		return p, err
	}
	for _, f := range [...]struct {
		bit  uint
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

// reservedLabels are the label names the daemon itself puts on push series.
func reservedLabel(s string) bool {
	switch s {
	case "pid", "uuid", "gpu", "pool", "parent", "runtime", "runtime_version", "series",
		"window", "verdict", "reason", "comm", "container_id", "pod_uid", "instance", "job":
		return true
	}
	return false
}

func labelNameProblem(s []byte) string {
	if len(s) == 0 || len(s) > MaxLabelNameBytes {
		return "must be 1 to 64 bytes"
	}
	for i, c := range s {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || i > 0 && c >= '0' && c <= '9'
		if !ok {
			return "must match ^[a-zA-Z_][a-zA-Z0-9_]{0,63}$"
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
