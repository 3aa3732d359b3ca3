package api

import "strconv"

// TemplateRef is the reference that names a template without doubt: its
// name for root's (the built-in one among them), "uid/name" for another
// owner's (e.g. "1000/data-science"). Names hold no '/', so no name is
// another's reference.
func TemplateRef(owner uint32, name string) string {
	if owner == 0 {
		return name
	}
	return strconv.FormatUint(uint64(owner), 10) + "/" + name
}
