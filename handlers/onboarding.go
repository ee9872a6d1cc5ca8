package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"switchyard/handlers/httpx"
	"switchyard/routing/config"
	"switchyard/routing/config/onboarding"
	"switchyard/store/rows"
	onbview "switchyard/views/pages/onboarding"
)

// WizardStore is the storage the onboarding wizard needs: one transaction
// creating the whole plan, the publish, and the sealing of keys carried
// between its pages. *store.Store satisfies it.
type WizardStore interface {
	DraftStore
	Onboard(ctx context.Context, b rows.OnboardingBatch) (rows.OnboardingResult, error)
	OpenTransient(token, purpose string) (string, error)
	Publish(ctx context.Context, in rows.PublishInput) (rows.PublishOutcome, error)
	SealTransient(plaintext, purpose string, ttl time.Duration) string
}

// Onboarding serves the onboarding wizard (the one-click onboarding): template →
// keys and models → review → done. It is the console Handler plus the
// wizard's own dependencies.
//
// The wizard's state travels in its forms. Provider keys are sealed with the
// store's key (AES-GCM, bound to the signed-in user, valid for an hour) as
// soon as they are posted, and only the sealed tokens go back to the
// browser; nothing is written to the database, or the session, before the
// operator confirms on the review step, and then everything is created in
// one transaction.
type Onboarding struct {
	*Handler
	Catalog *onboarding.Catalog
	// CatalogError says why the operator's catalogue file was not used.
	CatalogError string
	Verifier     *onboarding.Verifier
}

// NewOnboarding builds the wizard. A nil verifier verifies keys through the
// built-in adapters with a client whose deadlines come from each call's
// context.
func NewOnboarding(h *Handler, cat *onboarding.Catalog, catalogError string, v *onboarding.Verifier) *Onboarding {
	if v == nil {
		v = &onboarding.Verifier{Adapters: onboarding.DefaultAdapters(), Client: &http.Client{}}
	}
	if cat == nil {
		cat = &onboarding.Catalog{Format: onboarding.CatalogFormat}
	}
	return &Onboarding{Handler: h, Catalog: cat, CatalogError: catalogError, Verifier: v}
}

// onboardingKeyTTL bounds how long a sealed provider key stays usable in a
// wizard's forms.
const onboardingKeyTTL = time.Hour

func onboardingKeyPurpose(c echo.Context) string {
	return "onboarding-key:" + strconv.FormatInt(httpx.CurrentPrincipal(c).UserID, 10)
}

// Start lists the provider templates.
func (o *Onboarding) Start(c echo.Context) error {
	snap, _, err := o.Wizard.Draft(c.Request().Context())
	if err != nil {
		return err
	}
	p := onbview.StartPage{Page: o.page(c, "Onboarding", "onboarding"), Templates: o.Catalog.Templates, CatalogError: o.CatalogError}
	for _, pr := range snap.Providers {
		p.Providers = append(p.Providers, pr.Name)
	}
	return httpx.Render(c, http.StatusOK, onbview.Start(p), nil)
}

// Form shows the keys-and-models step of a template, pre-filled.
func (o *Onboarding) Form(c echo.Context) error {
	tpl, ok := o.Catalog.Template(c.Param("code"))
	if !ok {
		return echo.NewHTTPError(http.StatusNotFound, "There is no provider template "+strconv.Quote(c.Param("code"))+".")
	}
	snap, _, err := o.Wizard.Draft(c.Request().Context())
	if err != nil {
		return err
	}
	f := onbview.Form{CSRF: httpx.CSRFToken(c), Template: *tpl, ProviderName: freeName(tpl.Provider, providerNames(snap)), BaseURL: tpl.BaseURL, Errors: config.FieldErrors{},
		APIVersion: tpl.APIVersion, AuthURL: tpl.AuthURL, Region: tpl.Region}
	for _, g := range snap.RouteGroups {
		f.Groups = append(f.Groups, g.Name)
	}
	switch {
	case slices.Contains(f.Groups, onboarding.DefaultGroup):
		f.Group = onboarding.DefaultGroup
	case len(f.Groups) > 0:
		f.Group = f.Groups[0]
	}
	f.NewGroup = freeName(onboarding.DefaultGroup, f.Groups)
	if len(snap.Callers) == 0 {
		f.Caller = onboarding.DefaultCaller
	}
	f.Models = modelRows(tpl, snap, nil)
	f.Pending = o.pendingChanges(c, snap)
	return o.renderForm(c, http.StatusOK, f)
}

// Verify makes one minimal real call per key and shows the outcome in
// words. It stores nothing.
func (o *Onboarding) Verify(c echo.Context) error {
	wp, err := o.readPost(c)
	if err != nil {
		return err
	}
	f := wp.form
	if msg := config.ValidateBaseURL(f.BaseURL); msg != "" {
		f.Errors.Add("base_url", "Base URL "+msg)
		return o.renderForm(c, http.StatusUnprocessableEntity, f)
	}
	keys := wp.keys
	useDefault := len(keys) == 0 && wp.tpl.KeyOptional
	if useDefault {
		keys = []string{wp.tpl.DefaultKey}
	}
	if len(keys) == 0 {
		f.Errors.Add("keys", "Paste a key to verify it")
		return o.renderForm(c, http.StatusUnprocessableEntity, f)
	}
	if f.AuthURL != "" {
		if msg := config.ValidateBaseURL(f.AuthURL); msg != "" {
			f.Errors.Add("auth_url", "Entra ID authority "+msg)
			return o.renderForm(c, http.StatusUnprocessableEntity, f)
		}
	}
	probe := onboarding.Probe{Protocol: wp.tpl.Protocol, BaseURL: f.BaseURL, Model: probeModel(wp.choices, wp.tpl),
		APIVersion: f.APIVersion, Region: f.Region, AuthURL: f.AuthURL, Project: f.Project}
	verdicts := o.Verifier.VerifyAll(c.Request().Context(), probe, keys)
	for i := range verdicts {
		v := verdicts[i]
		o.Log.Info("onboarding key verified", "template", wp.tpl.Code, "key", v.Fingerprint, "ok", v.OK, "class", v.Class, "by", httpx.CurrentPrincipal(c).Name)
		if useDefault {
			f.DefaultVerdict = &v
		} else {
			f.Keys[i].Verdict = &v
		}
		if wp.tpl.CustomModels {
			for _, m := range v.Models {
				if _, known := wp.tpl.Model(m); !known && !slices.Contains(f.Listed, m) {
					f.Listed = append(f.Listed, m)
				}
			}
		}
	}
	return o.renderForm(c, http.StatusOK, f)
}

// Review shows every object about to be created and the dry-run of the
// draft as it will be. Nothing is created.
func (o *Onboarding) Review(c echo.Context) error {
	wp, err := o.readPost(c)
	if err != nil {
		return err
	}
	snap, rev, err := o.Wizard.Draft(c.Request().Context())
	if err != nil {
		return err
	}
	plan, errs := onboarding.Build(o.Catalog, wp.choices, snap)
	if errs != nil || len(wp.form.Errors) > 0 {
		wp.form.Errors = merge(wp.form.Errors, errs)
		return o.renderForm(c, http.StatusUnprocessableEntity, wp.form)
	}
	return o.renderReview(c, http.StatusOK, wp.form, plan, snap, rev, "")
}

// Back returns from the review to the form, keeping every choice.
func (o *Onboarding) Back(c echo.Context) error {
	wp, err := o.readPost(c)
	if err != nil {
		return err
	}
	return o.renderForm(c, http.StatusOK, wp.form)
}

// Create creates the reviewed plan in one transaction, publishes it when
// asked, and shows the new caller's API key once.
func (o *Onboarding) Create(c echo.Context) error {
	ctx := c.Request().Context()
	wp, err := o.readPost(c)
	if err != nil {
		return err
	}
	rev, err := strconv.ParseInt(c.FormValue("revision"), 10, 64)
	if err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, "The review step's draft revision is missing; review again.")
	}
	snap, current, err := o.Wizard.Draft(ctx)
	if err != nil {
		return err
	}
	plan, errs := onboarding.Build(o.Catalog, wp.choices, snap)
	if errs != nil || len(wp.form.Errors) > 0 {
		wp.form.Errors = merge(wp.form.Errors, errs)
		return o.renderForm(c, http.StatusUnprocessableEntity, wp.form)
	}
	batch := rows.OnboardingBatchOf(plan, rev)
	batch.Actor = httpx.CurrentPrincipal(c).Name
	res, err := o.Wizard.Onboard(ctx, batch)
	switch {
	case errors.Is(err, rows.ErrDraftChanged):
		return o.renderReview(c, http.StatusConflict, wp.form, plan, snap, current,
			"Someone changed the draft while you were reviewing. Review the objects again (this page is up to date now), then create.")
	case err != nil:
		fe, ok := fieldErrors(err)
		if !ok {
			return err
		}
		wp.form.Errors = merge(wp.form.Errors, fe)
		return o.renderForm(c, http.StatusUnprocessableEntity, wp.form)
	}
	who := httpx.CurrentPrincipal(c).Name
	var models []string
	for _, m := range plan.Models {
		models = append(models, m.Code)
	}
	o.Log.Info("onboarding created", "template", plan.Template.Code, "provider", plan.Provider.Name, "keys", len(plan.Keys),
		"models", strings.Join(models, ","), "group", plan.Group.Name, "caller_key_prefix", res.CallerKeyPrefix, "by", who)

	done := onbview.DonePage{Plan: plan, CallerKey: res.CallerKey, APIBase: o.onboardingAPIBase(c)}
	for _, m := range plan.Models {
		if m.Kind == config.KindEmbedding && done.Embedding == "" {
			done.Embedding = m.Code
		}
	}
	if c.FormValue("mode") == "publish" {
		out, err := o.Wizard.Publish(ctx, rows.PublishInput{Author: who, Message: "Onboarding: " + plan.Template.Name + " as provider " + plan.Provider.Name,
			ExpectedRevision: &res.Revision, Check: o.dryRun})
		if err != nil {
			reason, ok := publishRefusal(err)
			if !ok {
				return err
			}
			done.PublishError = reason
		} else {
			done.Published = out.Version.Number
			o.Log.Info("configuration published", "version", out.Version.Number, "author", who, "message", out.Version.Message)
		}
	}
	done.Page = o.page(c, "Onboarded", "onboarding") // after the publish, so the banner is current
	// The page is rendered in this response, never behind a redirect: the
	// caller key travels in no URL and is shown exactly once.
	return httpx.Render(c, http.StatusOK, onbview.Done(done), nil)
}

// onboardingAPIBase is the data plane's base URL for snippets.
func (o *Onboarding) onboardingAPIBase(c echo.Context) string {
	base := strings.TrimRight(o.BaseURL, "/")
	if base == "" {
		base = c.Scheme() + "://" + c.Request().Host
	}
	return base + "/v1"
}

func (o *Onboarding) renderForm(c echo.Context, status int, f onbview.Form) error {
	p := onbview.FormPage{Page: o.page(c, "Onboarding: "+f.Template.Name, "onboarding"), Form: f}
	return httpx.Render(c, status, onbview.FormView(p), onbview.FormBody(f))
}

func (o *Onboarding) renderReview(c echo.Context, status int, f onbview.Form, plan *onboarding.Plan, snap config.Snapshot, rev int64, msg string) error {
	after := plan.Apply(snap)
	p := onbview.ReviewPage{Page: o.page(c, "Onboarding: review", "onboarding"), Form: f, Plan: plan, Result: o.dryRun(after), Revision: rev, Error: msg}
	p.Form.Pending = o.pendingChanges(c, snap)
	for _, g := range after.RouteGroups {
		if g.Name != plan.Group.Name {
			continue
		}
		for _, name := range config.TierNames {
			tv := onbview.TierView{Name: name}
			if t := g.Tier(name); t != nil {
				for _, cd := range t.Candidates {
					cv := onbview.CandidateView{LogicModel: cd.LogicModel, Priority: cd.Priority, Weight: cd.Weight}
					for _, pc := range plan.Group.Candidates {
						if pc.Tier == name && pc.LogicModel == cd.LogicModel {
							cv.New, cv.From = true, pc.From
						}
					}
					tv.Candidates = append(tv.Candidates, cv)
				}
			}
			p.Tiers = append(p.Tiers, tv)
		}
	}
	return httpx.Render(c, status, onbview.Review(p), nil)
}

// pendingChanges reports whether the draft already differs from what is
// live in ways a publish would carry along (an empty install has none).
func (o *Onboarding) pendingChanges(c echo.Context, snap config.Snapshot) bool {
	live, differs, err := o.Wizard.DraftState(c.Request().Context())
	if err != nil {
		o.Log.Warn("draft state", "err", err)
		return false
	}
	empty := len(snap.Providers) == 0 && len(snap.LogicModels) == 0 && len(snap.RouteGroups) == 0 && len(snap.Callers) == 0 && len(snap.Tenants) == 0
	return differs && (live > 0 || !empty)
}

// wizardPost is one parsed post of the wizard.
type wizardPost struct {
	tpl     *onboarding.Template
	form    onbview.Form
	keys    []string // plaintext provider keys, held in memory for this request only
	choices onboarding.Choices
}

// readPost parses a wizard form: the template, the provider fields, the
// keys (sealed ones from earlier steps, minus those dropped, plus newly
// pasted ones, which are sealed at once), the models and the group and
// caller choices.
func (o *Onboarding) readPost(c echo.Context) (*wizardPost, error) {
	tpl, ok := o.Catalog.Template(c.FormValue("template"))
	if !ok {
		return nil, echo.NewHTTPError(http.StatusBadRequest, "Choose a provider template first.")
	}
	params, err := c.FormParams()
	if err != nil {
		return nil, echo.NewHTTPError(http.StatusBadRequest, "The form could not be read.")
	}
	snap, _, err := o.Wizard.Draft(c.Request().Context())
	if err != nil {
		return nil, err
	}
	wp := &wizardPost{tpl: tpl}
	f := onbview.Form{
		CSRF: httpx.CSRFToken(c), Template: *tpl, Errors: config.FieldErrors{},
		ProviderName: strings.TrimSpace(params.Get("provider_name")), BaseURL: strings.TrimSpace(params.Get("base_url")),
		Custom: strings.TrimSpace(params.Get("custom_models")), Group: strings.TrimSpace(params.Get("group")),
		NewGroup: strings.TrimSpace(params.Get("new_group")), Caller: strings.TrimSpace(params.Get("caller")),
	}
	if tpl.HasSetting("api_version") {
		f.APIVersion, f.AuthURL = strings.TrimSpace(params.Get("api_version")), strings.TrimSpace(params.Get("auth_url"))
	}
	if tpl.HasSetting("region") {
		f.Region = strings.TrimSpace(params.Get("region"))
	}
	if tpl.HasSetting("project") {
		f.Project = strings.TrimSpace(params.Get("project"))
	}
	for _, g := range snap.RouteGroups {
		f.Groups = append(f.Groups, g.Name)
	}

	wp.keys = o.readKeys(onboardingKeyPurpose(c), params, &f)
	readModels(tpl, snap, params, &f)
	f.Pending = o.pendingChanges(c, snap)
	wp.form, wp.choices = f, wizardChoices(tpl, f, wp.keys)
	return wp, nil
}

// readKeys reads the provider keys of a wizard post: the sealed ones from
// earlier steps, minus those dropped, then newly pasted ones, which are
// sealed at once. It returns the plaintext keys (for this request only) and
// records the sealed tokens and any errors on f.
func (o *Onboarding) readKeys(purpose string, params url.Values, f *onbview.Form) []string {
	var keys []string
	dropped := params["drop_key"]
	for _, tok := range params["sealed_key"] {
		if tok == "" || slices.Contains(dropped, tok) {
			continue
		}
		plain, err := o.Wizard.OpenTransient(tok, purpose)
		if err != nil {
			f.Errors.Add("keys", "A key entered earlier could not be read back (it is kept for an hour and only for you); paste it again")
			continue
		}
		if !slices.Contains(keys, plain) {
			keys = append(keys, plain)
			f.Keys = append(f.Keys, onbview.SealedKey{Token: tok, Fingerprint: config.KeyFingerprint(plain)})
		}
	}
	for _, k := range params["key"] {
		k = strings.TrimSpace(k)
		if k == "" || slices.Contains(keys, k) {
			continue
		}
		if fe := config.ValidateProviderKey("", k, true); len(fe) > 0 {
			f.Errors.Add("keys", "The key "+config.KeyFingerprint(k)+" "+fe["secret"])
			continue
		}
		keys = append(keys, k)
		f.Keys = append(f.Keys, onbview.SealedKey{Token: o.Wizard.SealTransient(k, purpose, onboardingKeyTTL), Fingerprint: config.KeyFingerprint(k)})
	}
	return keys
}

// readModels reads the model picks of a wizard post onto f: the template's
// models with their tiers and "separate" choices, and the listed custom
// models with those picked.
func readModels(tpl *onboarding.Template, snap config.Snapshot, params url.Values, f *onbview.Form) {
	posted := params.Get("posted") == "1"
	picked := map[string]bool{}
	for _, m := range params["model"] {
		picked[m] = true
	}
	tiers, separate := map[string]config.TierName{}, map[string]bool{}
	for _, m := range tpl.Models {
		if t := params.Get("tier:" + m.Upstream); config.ValidTier(t) {
			tiers[m.Upstream] = config.TierName(t)
		}
		separate[m.Upstream] = params.Get("use:"+m.Upstream) == "separate"
	}
	if !posted {
		picked = nil
	}
	f.Models = modelRows(tpl, snap, picked)
	for i := range f.Models {
		r := &f.Models[i]
		if t, ok := tiers[r.Model.Upstream]; ok {
			r.Tier = t
		}
		r.Separate = separate[r.Model.Upstream]
	}
	f.ListedPicked = map[string]bool{}
	for _, l := range params["listed"] {
		if l != "" && !slices.Contains(f.Listed, l) {
			f.Listed = append(f.Listed, l)
		}
	}
	for _, l := range params["custom_pick"] {
		f.ListedPicked[l] = true
	}
}

// wizardChoices turns a parsed wizard form into the choices the plan is
// built from.
func wizardChoices(tpl *onboarding.Template, f onbview.Form, keys []string) onboarding.Choices {
	ch := onboarding.Choices{Template: tpl.Code, ProviderName: f.ProviderName, BaseURL: f.BaseURL, Keys: keys,
		APIVersion: f.APIVersion, Region: f.Region, AuthURL: f.AuthURL, Project: f.Project,
		Group: f.Group, NewGroup: f.NewGroup, Caller: f.Caller}
	for _, r := range f.Models {
		if r.Checked {
			ch.Models = append(ch.Models, onboarding.Choice{Upstream: r.Model.Upstream, Tier: r.Tier, Separate: r.Separate})
		}
	}
	ch.Custom = splitModels(f.Custom)
	for _, l := range f.Listed {
		if f.ListedPicked[l] {
			ch.Custom = append(ch.Custom, l)
		}
	}
	return ch
}

// modelRows lists a template's models; picked nil means "first showing":
// the recommended ones are ticked.
func modelRows(tpl *onboarding.Template, snap config.Snapshot, picked map[string]bool) []onbview.ModelRow {
	var rows []onbview.ModelRow
	for _, m := range tpl.Models {
		r := onbview.ModelRow{Model: m, Tier: m.Tier, Checked: m.Recommended}
		if picked != nil {
			r.Checked = picked[m.Upstream]
		}
		for _, lm := range snap.LogicModels {
			if lm.Code == m.Code() && lm.Kind == m.Kind {
				r.Existing = lm.Code
			}
		}
		rows = append(rows, r)
	}
	return rows
}

// probeModel is the model a one-token verification chat asks for.
func probeModel(ch onboarding.Choices, tpl *onboarding.Template) string {
	for _, c := range ch.Models {
		if m, ok := tpl.Model(c.Upstream); ok && m.Kind == config.KindChat {
			return m.Upstream
		}
	}
	if len(ch.Custom) > 0 {
		return ch.Custom[0]
	}
	return ""
}

// splitModels splits the "other models" field on commas and white space.
func splitModels(s string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' || r == ' ' || r == '\n' || r == '\t' || r == '\r' }) {
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

func providerNames(s config.Snapshot) []string {
	out := make([]string, 0, len(s.Providers))
	for _, p := range s.Providers {
		out = append(out, p.Name)
	}
	return out
}

// freeName returns base, or base-2, base-3… when taken.
func freeName(base string, taken []string) string {
	name := base
	for n := 2; slices.Contains(taken, name); n++ {
		name = fmt.Sprintf("%s-%d", base, n)
	}
	return name
}
