package views

// Input describes one labelled text-like form field for Field.
type Input struct {
	// Name is the form field name; the element id is "f-" + Name.
	Name  string
	Label string
	// Type is the input type; "text" when empty.
	Type         string
	Value        string
	Placeholder  string
	Autocomplete string
	// Hint is a short help text under the field.
	Hint string
	// Error is shown under the field and marks it invalid.
	Error    string
	Required bool
	// Mono renders the value in the monospace font (ids, subjects).
	Mono bool
	// Phrase is a phrase to type (a typed confirmation), shown in the
	// label after Label. It and the field's error keep every space as it
	// is (.phrase: white-space pre-wrap), so what the page shows is what
	// must be typed.
	Phrase string
	// Rows, when above 0, makes the field a text box of that many rows
	// (a textarea): for a text that may hold line breaks, which a text
	// input drops from its value.
	Rows int
	// HotkeyFocus makes "/" focus this field (app.js).
	HotkeyFocus bool
	// Suggestions are values the browser offers as the field is typed
	// in (a datalist); none are required. One holding hidden or
	// direction-changing characters is labelled with how it reads
	// (Shown), as a Select's option labels are.
	Suggestions []string
}

// Select describes one labelled select field for SelectField.
type Select struct {
	Name    string
	Label   string
	Value   string
	Options []Option
	Hint    string
	Error   string
	// Required marks the field (RequiredMark) and makes the select
	// required: for what a form cannot be sent without. A filter is never
	// required, even one without an empty option (the error groups' Show
	// and Sort by): the mark read as "you must choose this".
	Required bool
	// Placeholder, when set, is an empty-valued first option ("Any action").
	Placeholder string
	// Typed makes the field a text input that takes any value, Options
	// only its suggestions (a datalist), Placeholder its placeholder: for
	// values too many to list (producer input such as item types).
	Typed bool
}

// Option is one choice of a Select.
type Option struct {
	Value string
	Label string
}

// Options turns plain values into options labelled with themselves.
func Options(values []string) []Option {
	out := make([]Option, 0, len(values))
	for _, v := range values {
		out = append(out, Option{Value: v, Label: v})
	}
	return out
}

func inputType(t string) string {
	if t == "" {
		return "text"
	}
	return t
}

func inputClass(in Input) string {
	c := "input"
	if in.Mono {
		c += " mono"
	}
	if in.Error != "" {
		c += " is-invalid"
	}
	return c
}

func describedBy(name, hint, err string) string {
	var ids string
	if hint != "" {
		ids = "f-" + name + "-hint"
	}
	if err != "" {
		if ids != "" {
			ids += " "
		}
		ids += errID(name)
	}
	return ids
}

// tenantOptions lists tenants as options, "*" labelled as all tenants.
func tenantOptions(tenants []string) []Option {
	out := make([]Option, 0, len(tenants))
	for _, t := range tenants {
		label := t
		if t == "*" {
			label = "* (all tenants)"
		}
		out = append(out, Option{Value: t, Label: label})
	}
	return out
}

func hasOption(opts []Option, v string) bool {
	for _, o := range opts {
		if o.Value == v {
			return true
		}
	}
	return false
}

// optionValues are the values of options, in order.
func optionValues(options []Option) []string {
	out := make([]string, len(options))
	for i, o := range options {
		out[i] = o.Value
	}
	return out
}
