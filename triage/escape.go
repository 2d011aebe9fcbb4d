package triage

import (
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"
)

// Every string triage prints for people comes from the daemon, and many of them from
// further away: a pushed label, a process's comm, a GPU name, an error body. A terminal
// obeys control characters in them, so one hostile label could clear the on-call's
// screen and print a fake "ALL GOOD". Escape makes each such character visible instead.

// Escape returns s with every control character (C0, DEL, C1), every bidirectional
// override or isolate and every invalid UTF-8 byte written as a visible escape (\x1b,
// \u202e, \xff), so the text cannot move the cursor, recolour or reorder the terminal.
func Escape(s string) string {
	if printableOnly(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func printableOnly(s string) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n <= 1) || r < 0x20 || r == 0x7f || unsafeRune(r) {
			return false
		}
		i += n
	}
	return true
}

// unsafeRune is a C1 control or a bidi control (Trojan Source, CVE-2021-42574).
func unsafeRune(r rune) bool {
	return (r >= 0x80 && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0x200e || r == 0x200f || r == 0x061c
}

// escaped returns a deep copy of v (a Report or any part of it) with Escape applied to
// every string in it, so a field added later cannot be printed raw by mistake.
func escaped[T any](v T) T {
	out := reflect.New(reflect.TypeOf(&v).Elem()).Elem()
	escapeInto(out, reflect.ValueOf(&v).Elem())
	return out.Interface().(T)
}

func escapeInto(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.String:
		dst.SetString(Escape(src.String()))
	case reflect.Struct:
		dst.Set(src) // unexported fields (time.Time's) are copied as they are
		for i := 0; i < src.NumField(); i++ {
			if dst.Field(i).CanSet() {
				escapeInto(dst.Field(i), src.Field(i))
			}
		}
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		dst.Set(reflect.MakeSlice(src.Type(), src.Len(), src.Len()))
		for i := 0; i < src.Len(); i++ {
			escapeInto(dst.Index(i), src.Index(i))
		}
	case reflect.Array:
		for i := 0; i < src.Len(); i++ {
			escapeInto(dst.Index(i), src.Index(i))
		}
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		dst.Set(reflect.New(src.Type().Elem()))
		escapeInto(dst.Elem(), src.Elem())
	case reflect.Map:
		if src.IsNil() {
			return
		}
		dst.Set(reflect.MakeMapWithSize(src.Type(), src.Len()))
		it := src.MapRange()
		for it.Next() {
			k := reflect.New(src.Type().Key()).Elem()
			escapeInto(k, it.Key())
			val := reflect.New(src.Type().Elem()).Elem()
			escapeInto(val, it.Value())
			dst.SetMapIndex(k, val)
		}
	case reflect.Interface:
		if src.IsNil() {
			return
		}
		inner := reflect.New(src.Elem().Type()).Elem()
		escapeInto(inner, src.Elem())
		dst.Set(inner)
	default:
		dst.Set(src)
	}
}
