package push

import (
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// Decode parses and validates one message. It walks jsontext's tokens through the v1
// schema (schema.go) rather than unmarshalling with encoding/json, because the daemon
// must tell a syntax error (invalid_json) from a wrong type (schema) from a bad number
// (invalid_bytes), must refuse repeated fields, and must stay cheap under a flood: one
// pass, no reflection, no intermediate tree, a pooled decoder.
//
// When a message has several problems the reason is chosen as docs/protocol.md says:
// invalid_json first, then unsupported_version, then the first problem in document order.
// Every error it returns is a *RejectError.
func Decode(b []byte) (Message, error) {
	// JSON text is UTF-8 (RFC 8259). Checked here rather than by jsontext: see
	// options. Invalid UTF-8 anywhere is invalid_json, which outranks every other
	// reason, so checking it first changes no decision.
	if !utf8.Valid(b) {
		return Message{}, invalidUTF8(b)
	}
	r := readers.Get().(*reader)
	defer r.release()
	r.reset(b)
	m, err := r.message()
	if err == nil {
		return m, nil
	}
	if err.Reason != ReasonInvalidJSON {
		// The walk stopped at the first problem; a syntax error further on still wins,
		// and so does a wrong version anywhere, because then the rest of the schema may
		// legitimately differ.
		r.reset(b)
		if cerr := r.check(); cerr != nil {
			return Message{}, cerr
		}
	}
	return Message{}, err
}

func invalidUTF8(b []byte) *RejectError {
	at := 0
	for at < len(b) {
		r, n := utf8.DecodeRune(b[at:])
		if r == utf8.RuneError && n == 1 {
			break
		}
		at += n
	}
	return reject(ReasonInvalidJSON, "invalid UTF-8 at byte %d: a message is UTF-8 JSON text", at)
}

// check reads a message the schema walk rejected for the two problems that outrank the
// first one found: invalid JSON anywhere (invalid_json), and a top-level "v" that is a
// number other than Version (unsupported_version).
func (r *reader) check() *RejectError {
	if r.dec.PeekKind() != jsontext.KindBeginObject {
		if err := r.skip(); err != nil {
			return err
		}
		return r.end()
	}
	if _, err := r.dec.ReadToken(); err != nil {
		return fail(err)
	}
	var version *RejectError
	found := false
	for {
		name, more, err := r.name()
		if err != nil {
			return err
		}
		if !more {
			break
		}
		if string(name) == "v" && !found && r.dec.PeekKind() == jsontext.KindNumber {
			found = true
			v, _, err := r.value(jsontext.KindNumber, "v", false)
			if err != nil {
				return err
			}
			if string(v) != versionText {
				version = unsupportedVersion(v)
			}
			continue
		}
		if err := r.skip(); err != nil {
			return err
		}
	}
	if err := r.end(); err != nil {
		return err
	}
	return version
}
