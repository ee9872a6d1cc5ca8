package auth

// SSORefusal is why a single-sign-on attempt (or a password sign-in while
// local passwords are off) was refused; Message puts it in words.
type SSORefusal string

// The refusals.
const (
	// SSOState: the answer does not belong to a sign-in this browser
	// started (state missing, expired or different).
	SSOState SSORefusal = "state"
	// SSOProvider: the identity provider answered with an error.
	SSOProvider SSORefusal = "provider_error"
	// SSOUnavailable: the provider could not be reached (discovery, keys).
	SSOUnavailable SSORefusal = "unavailable"
	// SSOExchange: the provider refused to exchange the code.
	SSOExchange SSORefusal = "exchange"
	// SSOBadToken: the ID token's signature, issuer or audience is wrong.
	SSOBadToken SSORefusal = "bad_token"
	// SSOExpired: the ID token has expired.
	SSOExpired SSORefusal = "expired"
	// SSONonce: the ID token was not issued for this sign-in.
	SSONonce SSORefusal = "nonce"
	// SSONoRole: the user is in no group that maps to a role.
	SSONoRole SSORefusal = "no_role"
	// SSONameTaken: a local user already has the provider account's name.
	SSONameTaken SSORefusal = "name_taken"
	// SSODisabled: an admin disabled the user.
	SSODisabled SSORefusal = "disabled"
	// LocalPasswordsOff: password sign-in is switched off.
	LocalPasswordsOff SSORefusal = "local_passwords_off"
)

// Message is the refusal in words.
func (r SSORefusal) Message() string {
	switch r {
	case SSOState:
		return "Single sign-on failed: this answer does not match a sign-in started in this browser (it may have expired). Start again."
	case SSOProvider:
		return "Single sign-on failed: the identity provider refused the sign-in."
	case SSOUnavailable:
		return "Single sign-on is unavailable: the identity provider could not be reached. Try again, or ask an admin to check the sign-in settings."
	case SSOExchange:
		return "Single sign-on failed: the identity provider did not accept the sign-in code."
	case SSOBadToken:
		return "Single sign-on refused: the identity token's signature, issuer or audience is not valid."
	case SSOExpired:
		return "Single sign-on refused: the identity token has expired. Check this server's clock, then start again."
	case SSONonce:
		return "Single sign-on refused: the identity token was not issued for this sign-in (nonce mismatch)."
	case SSONoRole:
		return "You are signed in at the identity provider, but none of your groups gives access to this console. Ask an admin to add you to a group."
	case SSONameTaken:
		return "Single sign-on refused: a local console user already has your name. Ask an admin to rename or disable that user."
	case SSODisabled:
		return "Your console user is disabled. Ask an admin."
	case LocalPasswordsOff:
		return "Password sign-in is switched off: use single sign-on."
	}
	return "Single sign-on failed."
}
