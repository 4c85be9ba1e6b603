package poison

import "testing"

// TestPoison checks that Bytes and Fill overwrite under the tag and leave
// memory alone without it.
func TestPoison(t *testing.T) {
	b := []byte("abc")
	s := []any{1, "x"}
	Bytes(b)
	Fill(s, Value)
	if On != (b[0] == Byte && b[2] == Byte) {
		t.Errorf("On %v, bytes %q", On, b)
	}
	if On != (Is(s[0]) && Is(s[1])) {
		t.Errorf("On %v, values %v", On, s)
	}
}

// TestReuse checks that Reuse poisons the whole buffer and gives nothing
// back under the tag, and gives the buffer back untouched without it.
func TestReuse(t *testing.T) {
	b := []byte("abcd")[:2]
	got := Reuse(b)
	full := b[:cap(b)]
	if On && (got != nil || full[0] != Byte || full[3] != Byte) || !On && (len(got) != 2 || string(full) != "abcd") {
		t.Errorf("On %v: Reuse gives %q, leaves %q", On, got, full)
	}
}
