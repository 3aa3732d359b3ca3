package pool

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestRefillRetry: the wait doubles from the minimum to the cap, and a
// success starts it over.
func TestRefillRetry(t *testing.T) {
	r := &refillRetry{min: 100 * time.Millisecond, max: 30 * time.Second}
	now := time.Unix(1000, 0)
	var waits []time.Duration
	for i := 0; i < 12; i++ {
		w, began := r.failed(now, errors.New("boom"))
		if began != (i == 0) {
			t.Fatalf("try %d: began %v", i, began)
		}
		waits = append(waits, w)
	}
	want := []time.Duration{100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 30000, 30000, 30000}
	for i := range want {
		if waits[i] != want[i]*time.Millisecond {
			t.Fatalf("waits %v", waits)
		}
	}
	if err, noSpace := r.problem(now); err == nil || noSpace || !strings.Contains(err.Error(), "12 tries") {
		t.Fatalf("problem: %v %v", err, noSpace)
	}
	if rec, n, _ := r.succeeded(); !rec || n != 12 {
		t.Fatalf("succeeded: %v %d", rec, n)
	}
	if rec, _, _ := r.succeeded(); rec {
		t.Fatal("recovered twice")
	}
	if err, _ := r.problem(now); err != nil {
		t.Fatal(err)
	}
	if w, began := r.failed(now, errors.New("again")); w != 100*time.Millisecond || !began {
		t.Fatalf("after a success: %v %v", w, began)
	}
}
