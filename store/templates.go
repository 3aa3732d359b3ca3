package store

import (
	bolt "go.etcd.io/bbolt"
)

// PutTemplate writes a template as it was added.
func (s *Store) PutTemplate(t *Template) error { return s.put(bucketTemplates, t.Name, t) }

// Templates lists the templates added, in name order.
func (s *Store) Templates() ([]*Template, error) { return list[Template](s, bucketTemplates) }

// DeleteTemplate removes a template; removing a missing one is no error.
func (s *Store) DeleteTemplate(name string) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketTemplates).Delete([]byte(name))
	})
}
