package metrics

import (
	"encoding/json"
	"os"
	"testing"
)

// The shipped Grafana dashboard queries only what the gateway exports:
// every expression's metrics and labels are held against the registry the
// gateway builds, and every panel reads the data source the importer picks.
func TestGrafanaDashboardQueriesExportedSeries(t *testing.T) {
	raw, err := os.ReadFile("grafana/switchyard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash map[string]any
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	if !hasDatasourceVariable(dash) {
		t.Error("the dashboard has no DS_PROMETHEUS data-source variable")
	}
	series := exportedSeries(t)
	exprs, uids := 0, 0
	walkJSON(dash, func(key string, v any) {
		switch key {
		case "expr":
			expr, _ := v.(string)
			exprs++
			for _, p := range exprProblems(series, expr) {
				t.Errorf("%s: %s", expr, p)
			}
		case "datasource":
			ds, _ := v.(map[string]any)
			if ds["uid"] != "${DS_PROMETHEUS}" {
				t.Errorf("a data source is %v, not the DS_PROMETHEUS variable", v)
			}
			uids++
		}
	})
	if exprs < 20 || uids < exprs {
		t.Errorf("%d expressions and %d data-source references: the dashboard lost its panels", exprs, uids)
	}
}

func hasDatasourceVariable(dash map[string]any) bool {
	tpl, _ := dash["templating"].(map[string]any)
	list, _ := tpl["list"].([]any)
	for _, v := range list {
		if m, _ := v.(map[string]any); m["name"] == "DS_PROMETHEUS" && m["type"] == "datasource" && m["query"] == "prometheus" {
			return true
		}
	}
	return false
}

// walkJSON calls f with every key and value of every object in v.
func walkJSON(v any, f func(key string, v any)) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			f(k, e)
			walkJSON(e, f)
		}
	case []any:
		for _, e := range x {
			walkJSON(e, f)
		}
	}
}
