package store

import (
	"strconv"

	bolt "go.etcd.io/bbolt"
)

// TemplateKey is a template's key in its bucket, and what session records
// name it by: its name for root's, "uid/name" for another owner's (the
// API's TemplateRef; names hold no '/'). Names are unique per owner.
func TemplateKey(owner uint32, name string) string {
	if owner == 0 {
		return name
	}
	return strconv.FormatUint(uint64(owner), 10) + "/" + name
}

// PutTemplate writes a template as it was added.
func (s *Store) PutTemplate(t *Template) error {
	return s.put(bucketTemplates, TemplateKey(t.OwnerUID, t.Name), t)
}

// Templates lists the templates added, in key order.
func (s *Store) Templates() ([]*Template, error) { return list[Template](s, bucketTemplates) }

// DeleteTemplate removes owner's template name; removing a missing one is
// no error.
func (s *Store) DeleteTemplate(owner uint32, name string) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketTemplates).Delete([]byte(TemplateKey(owner, name)))
	})
}
