package policy

import (
	"sync"
	"testing"
)

// TestAuthorizeConcurrent shares one Engine between goroutines; run with
// -race.
func TestAuthorizeConcurrent(t *testing.T) {
	t.Parallel()
	e := loadTestdata(t)
	const workers, rounds = 8, 20
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				tt := testdataCases[(w+r)%len(testdataCases)]
				checkDecision(t, e, tt, e.Authorize(tt.req))
			}
		}()
	}
	wg.Wait()
}
