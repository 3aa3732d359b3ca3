package store

import (
	"encoding/json"

	bolt "go.etcd.io/bbolt"

	"github.com/sandboxd/sandboxd/api"
)

// PutTemplate writes a template as it was added.
func (s *Store) PutTemplate(t *api.Template) error {
	b, err := json.Marshal(t)
	if err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketTemplates).Put([]byte(t.Name), b)
	})
}

// Templates lists the templates added, in name order.
func (s *Store) Templates() ([]*api.Template, error) {
	var out []*api.Template
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketTemplates).ForEach(func(_, v []byte) error {
			var t api.Template
			if err := json.Unmarshal(v, &t); err != nil {
				return err
			}
			out = append(out, &t)
			return nil
		})
	})
	return out, err
}

// DeleteTemplate removes a template; removing a missing one is no error.
func (s *Store) DeleteTemplate(name string) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketTemplates).Delete([]byte(name))
	})
}
