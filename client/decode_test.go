package client

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/testutil"
)

// TestDecodeAgreesWithEncodingJSON: what the daemon answers, decode reads
// as encoding/json did, into every kind of field the API has.
func TestDecodeAgreesWithEncodingJSON(t *testing.T) {
	for _, tc := range testutil.Answers() {
		t.Run(tc.Name, func(t *testing.T) {
			b, err := json.Marshal(tc.Value)
			if err != nil {
				t.Fatal(err)
			}
			// Members the client does not know (a newer daemon's) are
			// passed over, as encoding/json did.
			b = bytes.Replace(b, []byte("{"), []byte(`{"a_newer_field":{"x":[1]},`), 1)
			typ := reflect.TypeOf(tc.Value)
			want, got := reflect.New(typ).Interface(), reflect.New(typ).Interface()
			if err := json.Unmarshal(b, want); err != nil {
				t.Fatal(err)
			}
			if err := decode(bytes.NewReader(b), got); err != nil {
				t.Fatalf("decode %s: %v", b, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("decode: %+v\nencoding/json: %+v", got, want)
			}
		})
	}
}

// TestDecodeErrors: an answer that is not JSON, or not of its type, is an
// error.
func TestDecodeErrors(t *testing.T) {
	for _, body := range []string{"", "<html>", `{"id": 1}`, `{"id": "a"} {"id": "b"}`, `{"id": "a"`} {
		var s api.Session
		if err := decode(strings.NewReader(body), &s); err == nil {
			t.Errorf("decode %q: no error", body)
		}
	}
}

// BenchmarkDecode: a list of 1000 sessions (make bench's), decoded beside
// encoding/json's decoder, as the client read answers before.
func BenchmarkDecode(b *testing.B) {
	body, err := json.Marshal(api.SessionList{Sessions: testutil.Sessions(1000)})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			var l api.SessionList
			if err := json.NewDecoder(bytes.NewReader(body)).Decode(&l); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		for b.Loop() {
			var l api.SessionList
			if err := decode(bytes.NewReader(body), &l); err != nil {
				b.Fatal(err)
			}
		}
	})
}
