package load

import "testing"

// TestIDKey: numeric _ids compare by value whatever their BSON type (as
// MongoDB's unique _id index does); other types by type and bytes.
func TestIDKey(t *testing.T) {
	id := func(ext string) []byte {
		v, err := DocumentID(rawDoc(t, `{"_id": `+ext+`}`))
		if err != nil {
			t.Fatal(err)
		}
		return AppendKey([]byte{'c', 0}, v)
	}
	same := [][2]string{{`{"$numberInt": "7"}`, `{"$numberLong": "7"}`}, {`{"$numberInt": "7"}`, `{"$numberDouble": "7.0"}`}}
	for _, p := range same {
		if string(id(p[0])) != string(id(p[1])) {
			t.Errorf("%s and %s have different keys", p[0], p[1])
		}
	}
	differ := [][2]string{{`{"$numberInt": "7"}`, `"7"`}, {`{"$numberDouble": "7.5"}`, `{"$numberInt": "7"}`}, {`"a"`, `"b"`}}
	for _, p := range differ {
		if string(id(p[0])) == string(id(p[1])) {
			t.Errorf("%s and %s have the same key", p[0], p[1])
		}
	}
	if got := string(KeyJSON(id(`{"$numberLong": "-42"}`)[2:])); got != "-42" {
		t.Errorf("refJSON of -42 = %s", got)
	}
}
