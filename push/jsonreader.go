package push

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// reader is the lexical half of Decode: jsontext checks the JSON grammar, escapes and
// nesting depth; reader turns its tokens into the few shapes the v1 schema needs (an
// object's names, an array's elements, a string, a bounded integer) and its errors into
// reject reasons. It knows no field of the protocol.
type reader struct {
	dec jsontext.Decoder
	// in hands the message to dec: jsontext reads a *bytes.Buffer in place, without
	// copying it into a buffer of its own.
	in  bytes.Buffer
	msg []byte // what in holds: tokens are cut from it by offset
	// Unescaped strings and names when they had escapes; reused so that only the
	// strings a Message keeps are allocated.
	strBuf, nameBuf []byte
	// Devices and pools gathered before they are copied out at their exact size.
	devBuf  []Device
	poolBuf []Pool
}

// readers keeps decoders warm: a reset jsontext.Decoder keeps the capacity of its
// stacks, so reading a message allocates nothing but what the Message keeps.
var readers = sync.Pool{New: func() any { return new(reader) }}

// options leave two checks of jsontext's default to Decode:
//   - UTF-8. jsontext refuses invalid UTF-8 and lone surrogate escapes under one switch,
//     but docs/protocol.md promises that a lone surrogate escape decodes to U+FFFD (as
//     encoding/json has it, and Python's json.dumps sends for a str that holds one), so
//     Decode validates the message's UTF-8 itself.
//   - Repeated names. The schema refuses a repeated known field itself; jsontext would
//     check every object, unknown fields' values included, which costs a sixth of a
//     typical decode and, past 64 names in an object, one allocation per name: a 60 KiB
//     object of short names took 11 times as long as the old scanner and 6,000
//     allocations (BenchmarkDecodeHostile/wide-object).
var options = []jsontext.Options{jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true)}

func (r *reader) reset(b []byte) {
	r.msg = b
	r.in = *bytes.NewBuffer(b)
	r.dec.Reset(&r.in, options...)
}

// release puts the reader back in the pool without its references to what was decoded,
// which the Store keeps. dec still refers to the message until the next reset: dropping
// that too would cost a second reset per message, and it pins at most one message per
// pooled reader.
func (r *reader) release() {
	r.msg, r.in = nil, bytes.Buffer{}
	clear(r.devBuf[:cap(r.devBuf)])
	clear(r.poolBuf[:cap(r.poolBuf)])
	readers.Put(r)
}

// fail turns an error from jsontext into a reject.
func fail(err error) *RejectError {
	if err == io.EOF {
		return reject(ReasonInvalidJSON, "empty message: a message is one JSON object")
	}
	var serr *jsontext.SyntacticError
	if !errors.As(err, &serr) {
		return reject(ReasonInvalidJSON, "%v", err)
	}
	what := serr.Err
	if errors.Is(what, io.ErrUnexpectedEOF) {
		what = errors.New("message ends inside a JSON value")
	}
	if serr.JSONPointer != "" {
		return reject(ReasonInvalidJSON, "%v at byte %d (in %s)", what, serr.ByteOffset, quote(string(serr.JSONPointer)))
	}
	return reject(ReasonInvalidJSON, "%v at byte %d", what, serr.ByteOffset)
}

// kindName is how a Detail names what a sender put where something else belongs.
func kindName(k jsontext.Kind) string {
	switch k {
	case jsontext.KindBeginObject:
		return "an object"
	case jsontext.KindBeginArray:
		return "an array"
	case jsontext.KindString:
		return "a string"
	case jsontext.KindTrue, jsontext.KindFalse:
		return "a boolean"
	case jsontext.KindNull:
		return "null"
	}
	return "a number"
}

func mistyped(want jsontext.Kind, field string, got jsontext.Kind) *RejectError {
	w := "an integer"
	if want != jsontext.KindNumber {
		w = kindName(want)
	}
	return reject(ReasonSchema, "%s must be %s, not %s", field, w, kindName(got))
}

// next reads the next token and returns its kind and, for a string or a number, its
// text. jsontext validates the token; its text is cut from the message by offset, which
// costs no allocation where Token.String would copy, and its kind is told by its last
// byte.
func (r *reader) next() (jsontext.Kind, []byte, *RejectError) {
	start := r.dec.InputOffset()
	if _, err := r.dec.ReadToken(); err != nil {
		return jsontext.KindInvalid, nil, fail(err)
	}
	end := r.dec.InputOffset()
	switch c := r.msg[end-1]; c {
	case '"':
		return jsontext.KindString, r.text(start, end), nil
	case '{', '}', '[', ']':
		return jsontext.Kind(c), nil, nil
	case 'l':
		return jsontext.KindNull, nil, nil
	case 'e':
		return jsontext.KindTrue, nil, nil // or false: both are "a boolean"
	}
	return jsontext.KindNumber, r.text(start, end), nil
}

// precedes is what may stand between the end of one token and the start of the next.
var precedes = [256]bool{' ': true, '\t': true, '\n': true, '\r': true, ',': true, ':': true}

// text is the token that ends at offset end and began after offset start.
func (r *reader) text(start, end int64) []byte {
	raw := r.msg[start:end]
	i := 0
	for precedes[raw[i]] {
		i++
	}
	return raw[i:]
}

// value reads the value of field, which must be of kind want. It reports null=true when
// the value is null and nullOK; any other kind is a schema error. The walk stops at the
// first error, so a value of the wrong kind may be left half read: check reads the
// message afresh.
func (r *reader) value(want jsontext.Kind, field string, nullOK bool) (raw []byte, null bool, err *RejectError) {
	k, raw, err := r.next()
	switch {
	case err != nil:
		return nil, false, err
	case k == want:
		return raw, false, nil
	case k == jsontext.KindNull && nullOK:
		return nil, true, nil
	}
	return nil, false, mistyped(want, field, k)
}

// open reads the '{' or '[' that begins field's value; null=true (only when nullOK)
// means the value was null instead.
func (r *reader) open(want jsontext.Kind, field string, nullOK bool) (null bool, err *RejectError) {
	_, null, err = r.value(want, field, nullOK)
	return null, err
}

// name reads the next name of the object being walked, or its closing '}' (then more is
// false). The name is only valid until the next name is read; the reader is then on the
// member's value, which the caller must consume.
func (r *reader) name() (name []byte, more bool, err *RejectError) {
	start := r.dec.InputOffset()
	if _, err := r.dec.ReadToken(); err != nil {
		return nil, false, fail(err)
	}
	// jsontext has refused anything but a name or the end of the object here.
	end := r.dec.InputOffset()
	if r.msg[end-1] == '}' {
		return nil, false, nil
	}
	return unquote(&r.nameBuf, r.text(start, end)), true, nil
}

// element reads the next element of the array being walked, which must be of kind
// want, or its closing ']' (then more is false). Only the element's first token is read:
// for an object, the caller reads its names next.
func (r *reader) element(want jsontext.Kind, field string) (more bool, err *RejectError) {
	k, _, err := r.next()
	switch {
	case err != nil:
		return false, err
	case k == jsontext.KindEndArray:
		return false, nil
	case k != want:
		return false, mistyped(want, field, k)
	}
	return true, nil
}

// str reads field's string value. The result aliases the message, or a reused buffer
// when the string had escapes; it is only valid until the next string is read.
func (r *reader) str(field string, nullOK bool) (s []byte, null bool, err *RejectError) {
	// value's work done here: strings and numbers are most of a message's values,
	// and a call less for each shows.
	k, raw, err := r.next()
	switch {
	case err != nil:
		return nil, false, err
	case k == jsontext.KindString:
		return unquote(&r.strBuf, raw), false, nil
	case k == jsontext.KindNull && nullOK:
		return nil, true, nil
	}
	return nil, false, mistyped(jsontext.KindString, field, k)
}

// unquote returns the contents of the JSON string v (quotes included, nothing around
// them), unescaped into *buf if need be.
func unquote(buf *[]byte, v []byte) []byte {
	if !hasBackslash(v) {
		return v[1 : len(v)-1]
	}
	// jsontext has checked the grammar, so the only error left to report is a lone
	// surrogate escape, which AppendUnquote has already turned into U+FFFD as
	// docs/protocol.md says.
	*buf, _ = jsontext.AppendUnquote((*buf)[:0], v)
	return *buf
}

// hasBackslash reports whether b holds a '\\', eight bytes at a time: jsontext knows
// whether a string had escapes but does not say, and a message's strings are short, where
// bytes.IndexByte costs more in calls than it saves.
func hasBackslash(b []byte) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for len(b) >= 8 {
		// A zero byte in x is a backslash in b; (x-ones)&^x&highs is non-zero exactly
		// when x has a zero byte.
		x := binary.LittleEndian.Uint64(b) ^ ('\\' * ones)
		if (x-ones)&^x&highs != 0 {
			return true
		}
		b = b[8:]
	}
	for _, c := range b {
		if c == '\\' {
			return true
		}
	}
	return false
}

// maxValueDigits bounds the length of an in-range integer, so a long one is refused
// without parsing it.
var maxValueDigits = len(fmt.Sprint(uint64(MaxValue)))

// uint reads a byte or counter field: a JSON integer in [0, MaxValue]. null=true means
// the value was null (only when nullOK).
func (r *reader) uint(field string, nullOK bool) (v uint64, null bool, err *RejectError) {
	return r.uintUpTo(field, nullOK, MaxValue)
}

// uintUpTo reads an integer field in [0, max], max at most MaxValue, as uint does; one
// out of range is invalid_bytes too, and the detail states max.
func (r *reader) uintUpTo(field string, nullOK bool, max uint64) (v uint64, null bool, err *RejectError) {
	k, tok, err := r.next() // value's work done here, as in str
	switch {
	case err != nil:
		return 0, false, err
	case k == jsontext.KindNull && nullOK:
		return 0, true, nil
	case k != jsontext.KindNumber:
		return 0, false, mistyped(jsontext.KindNumber, field, k)
	}
	// jsontext has checked the grammar: digits alone are a non-negative integer
	// without leading zeros; a sign, fraction or exponent shows as a non-digit.
	ok := len(tok) <= maxValueDigits
	for _, c := range tok {
		if c < '0' || c > '9' {
			ok = false
			break
		}
		v = v*10 + uint64(c-'0')
	}
	if !ok || v > max {
		return 0, false, reject(ReasonInvalidBytes, "%s must be an integer from 0 to %d, not %s", field, max, quote(string(tok)))
	}
	return v, false, nil
}

// skip passes over any value (an unknown field), which jsontext checks as it goes.
func (r *reader) skip() *RejectError {
	if err := r.dec.SkipValue(); err != nil {
		return fail(err)
	}
	return nil
}

// end checks that nothing but whitespace follows the top-level value: jsontext reads a
// stream of values, a message is exactly one.
func (r *reader) end() *RejectError {
	at := r.dec.InputOffset()
	for i, c := range r.msg[at:] {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			next, _ := utf8.DecodeRune(r.msg[at+int64(i):])
			return reject(ReasonInvalidJSON, "%q after the end of the message's JSON value at byte %d; send exactly one JSON object per message", next, at+int64(i))
		}
	}
	return nil
}
