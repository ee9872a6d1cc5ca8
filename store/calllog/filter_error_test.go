package calllog

import (
	"errors"
	"fmt"
	"testing"
)

// A refused filter carries its reason as a field, so a page shows the
// reason without cutting the error's text apart.
func TestFilterErrorCarriesTheReason(t *testing.T) {
	_, err := searchQuery(Filter{Status: "fine"}, resolvedNames{})
	err = fmt.Errorf("search: %w", err)
	var fe *FilterError
	if !errors.As(err, &fe) {
		t.Fatalf("err = %v, want a *FilterError", err)
	}
	if want := `unknown status "fine"`; fe.Reason != want {
		t.Errorf("Reason = %q, want %q", fe.Reason, want)
	}
	if !errors.Is(err, ErrInvalidFilter) {
		t.Errorf("errors.Is(%v, ErrInvalidFilter) = false", err)
	}
	if errors.Is(errors.New("other"), ErrInvalidFilter) {
		t.Error("an unrelated error is ErrInvalidFilter")
	}
}
