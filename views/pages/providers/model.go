// Package providers renders the Providers pages: providers and their key pools.
package providers

import (
	"strconv"
	"time"

	"switchyard/routing/config"
	"switchyard/views/components"
	"switchyard/views/layout"
)

// KeyRuntime is a key's live state, shared by every gateway instance.
type KeyRuntime struct {
	Status   string // active | cooling | quarantined
	Reason   string
	Since    time.Time
	Until    time.Time
	LastUsed time.Time
}

// Row is one provider on the list page.
type Row struct {
	config.Provider
	Deployments []string
	Keys        map[int64]KeyRuntime
}

// ListPage is the Providers page.
type ListPage struct {
	Page layout.Page
	Rows []Row
}

// Form is the create/edit form.
type Form struct {
	ID     int64
	V      config.Provider
	Errors config.FieldErrors
	CSRF   string
}

// Action is where the form posts.
func (f Form) Action() string {
	if f.ID == 0 {
		return "/providers"
	}
	return "/providers/" + strconv.FormatInt(f.ID, 10)
}

// KeyForm is the add-key form inside a key pool.
type KeyForm struct {
	Label  string
	Errors config.FieldErrors
}

// Pool is the key pool fragment of one provider.
type Pool struct {
	Provider config.Provider
	Keys     map[int64]KeyRuntime
	Form     KeyForm
	CSRF     string
	CanEdit  bool
}

func protocolOptions() []components.Option {
	return []components.Option{
		{Value: "openai", Label: "OpenAI-compatible"},
		{Value: "anthropic", Label: "Anthropic Messages"},
		{Value: "gemini", Label: "Google Gemini"},
	}
}

func keyBadge(status, cfg string) (kind, text string) {
	if cfg == config.KeyDisabled {
		return "", "disabled"
	}
	switch status {
	case "cooling":
		return "warn", "cooling"
	case "quarantined":
		return "bad", "quarantined"
	}
	return "ok", "active"
}
