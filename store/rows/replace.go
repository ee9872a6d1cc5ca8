package rows

// ReplaceNote reports something ReplaceDraft adjusted rather than refused.
type ReplaceNote struct {
	Object  string `json:"object"`
	Message string `json:"message"`
}
