package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"switchyard/store/storetest"
)

// TestCallerKeyExpiryAndRotationInTheConsole: as an operator would. A key
// made with an owner and an expiry within the week is listed amber and
// named on the Callers page; rotating it with a custom grace shows the new
// key once; both keys work during the grace, and the old one is refused
// with api_key_rotated after it.
func TestCallerKeyExpiryAndRotationInTheConsole(t *testing.T) {
	dsn := storetest.NewDatabase(t)
	fakeAddr := freePort(t)
	start(t, "fakeupstream", nil, "-addr", fakeAddr)
	seedPublished(t, dsn, "http://"+fakeAddr)
	s := startServer(t, dsn)
	u := &ui{t: t, p: newPage(t), base: s.URL}
	u.login("admin", s.Admin)

	u.goto_("/callers")
	u.click(u.id("caller-app").GetByTestId("caller-link"), "open caller app")
	u.fill(u.id("caller-key-name"), "billing", "key name")
	u.fill(u.id("caller-key-owner-input"), "team-billing", "key owner")
	soon := time.Now().Add(3 * 24 * time.Hour).UTC().Format("2006-01-02")
	u.fill(u.id("caller-key-expires-input"), soon, "key expiry")
	u.click(u.id("caller-key-create"), "create key")
	oldKey := strings.TrimSpace(u.text(u.id("caller-key-plaintext"), "new key"))
	waitChat(t, s.URL, oldKey, http.StatusOK, "the new key")

	row := u.p.Locator(`tr:has([data-testid="caller-key-owner"]:text("team-billing"))`)
	u.see(row.Locator(`[data-testid="caller-key-expires"] .badge.warn`), "the amber expiry")
	u.goto_("/callers")
	u.see(u.id("callers-keys-expiring"), "the keys expiring soon")
	if txt := u.text(u.id("callers-keys-expiring"), "expiring keys"); !strings.Contains(txt, "team-billing") {
		t.Fatalf("expiring keys list: %q", txt)
	}

	u.click(u.id("caller-app").GetByTestId("caller-link"), "open caller app again")
	u.fill(row.Locator(`input[name="grace_custom"]`), "4s", "custom grace")
	u.click(row.Locator(`[data-testid^="caller-key-rotate-"]`).Last(), "rotate the key")
	u.see(u.id("caller-key-rotated"), "the rotation notice")
	newKey := strings.TrimSpace(u.text(u.id("caller-key-plaintext"), "the successor key"))
	if newKey == oldKey {
		t.Fatal("rotation showed the old key")
	}
	waitChat(t, s.URL, newKey, http.StatusOK, "the successor key")
	if code, body := chatWith(t, s.URL, oldKey); code != http.StatusOK {
		t.Fatalf("the old key inside its grace: %d %s", code, body)
	}
	body := waitChat(t, s.URL, oldKey, http.StatusUnauthorized, "the old key after its grace")
	if !strings.Contains(body, "api_key_rotated") {
		t.Fatalf("old key after grace: %s", body)
	}
	waitChat(t, s.URL, newKey, http.StatusOK, "the successor after the grace")
}
