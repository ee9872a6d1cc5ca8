package adapter

import (
	"strings"
	"testing"
)

func TestScrubTakesOutKeyLikeTextAndKeepsTheRest(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"OpenAI context length kept whole",
			"This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. Please reduce the length of the messages.",
			"This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. Please reduce the length of the messages."},
		{"OpenAI masked key in a 401",
			"Incorrect API key provided: sk-*****XYZW. You can find your API key at https://platform.openai.com/account/api-keys.",
			"Incorrect API key provided: [redacted]. You can find your API key at https://platform.openai.com/account/api-keys."},
		{"our fingerprint", "auth with key sk-…XYZW failed", "auth with key [redacted] failed"},
		{"project fingerprint", "key sk-proj-…abcd", "key [redacted]"},
		{"Anthropic fingerprint", "key sk-ant-…abcd", "key [redacted]"},
		{"fingerprint of another vendor", "key AIz…WXYZ and gsk…1234", "key [redacted] and [redacted]"},
		{"dotted mask", "key sk-...XYZW is wrong", "key [redacted] is wrong"},
		{"bare mask", "key ****************WXYZ", "key [redacted]"},
		{"full OpenAI project key", "got sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789 in messages[0]", "got [redacted] in messages[0]"},
		{"full Anthropic key", "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789-ABCDEFGH", "[redacted]"},
		{"legacy OpenAI key", "(sk-abcdefghijklmnopqrstuvwxyz123456)", "([redacted])"},
		{"Google key", "API key AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW not valid", "API key [redacted] not valid"},
		{"Google key in a URL", "GET /v1beta/models?key=AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW&alt=sse", "GET /v1beta/models?key=[redacted]&alt=sse"},
		{"Bearer token", `header "Authorization: Bearer abc.def-ghi_jkl" refused`, `header "Authorization: Bearer [redacted]" refused`},
		{"bearer lower case", "bearer sk-xyz12345678", "Bearer [redacted]"},
		{"api_key value", `{"api_key": "hunter2hunter2"}`, `{"api_key": "[redacted]"}`},
		{"x-api-key header", "x-api-key: abcd1234efgh", "x-api-key: [redacted]"},
		{"password", "password=correcthorse", "password=[redacted]"},
		{"JWT", "token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.sig-nature_x expired", "token [redacted] expired"},
		{"long hex", "request 0123456789abcdef0123456789abcdef failed", "request [redacted] failed"},
		{"base64 token", "secret dGhpcyBpcyBhIHNlY3JldCB0b2tlbjEyMw== leaked", "secret [redacted] leaked"},
		{"xAI key", "xai-AbCdEfGh12345678IjKlMnOp", "[redacted]"},
		{"Groq key", "gsk_abcdefgh12345678", "[redacted]"},
		{"Hugging Face token", "hf_abcdefghijklmnopqrstuvwxyzABCD", "[redacted]"},
		{"AWS access key", "AKIAIOSFODNN7EXAMPLE", "[redacted]"},
		// What must stay: the caller needs it to fix the request.
		{"model names", "mistralai/Mixtral-8x7B-Instruct-v0.1 and gemini-1.5-pro-002 and claude-3-5-sonnet-20241022",
			"mistralai/Mixtral-8x7B-Instruct-v0.1 and gemini-1.5-pro-002 and claude-3-5-sonnet-20241022"},
		{"a path", "projects/123456789/locations/us-central1/publishers/google/models/gemini-pro",
			"projects/123456789/locations/us-central1/publishers/google/models/gemini-pro"},
		{"long words", "internationalization_and_localization of the messages[3].content parameter",
			"internationalization_and_localization of the messages[3].content parameter"},
		{"parameter names", "max_tokens=4096 is too large: max_completion_tokens must be at most 16384",
			"max_tokens=4096 is too large: max_completion_tokens must be at most 16384"},
		{"short sk word", "use sk-learn or task-force", "use sk-learn or task-force"},
		{"bearer in prose", "use Bearer auth", "use Bearer auth"},
		{"a uuid", "trace 123e4567-e89b-12d3-a456-426614174000", "trace 123e4567-e89b-12d3-a456-426614174000"},
		{"ellipsis in prose", "the text was cut… and more", "the text was cut… and more"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Scrub(tt.in)
			if got != tt.want {
				t.Errorf("Scrub(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
			if again := Scrub(got); again != got {
				t.Errorf("not idempotent: %q -> %q", got, again)
			}
		})
	}
}

func TestScrubLeavesNoPieceOfAKey(t *testing.T) {
	key := "sk-proj-Q3vT9xLm2Wp8Rk4Zs7Yb1Nc6Hd0Fg5JaXYZW"
	for _, msg := range []string{
		"Incorrect API key provided: " + key + ".",
		"key=" + key,
		"Authorization: Bearer " + key,
		`{"error":"invalid key ` + key + `"}`,
	} {
		got := Scrub(msg)
		for _, piece := range []string{key, "Q3vT9xLm", "XYZW"} {
			if strings.Contains(got, piece) {
				t.Errorf("Scrub(%q) = %q keeps %q", msg, got, piece)
			}
		}
	}
}
