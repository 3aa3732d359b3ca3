package api

import "time"

// Volume is a filesystem of its own size that outlives sessions: the
// caller's sessions mount it, each seeing its files as its own user's.
type Volume struct {
	Name      string    `json:"name"`
	SizeMB    int64     `json:"size_mb"`
	UsedMB    int64     `json:"used_mb"`
	OwnerUID  uint32    `json:"owner_uid"`
	CreatedAt time.Time `json:"created_at"`
	// MountedBy are the sessions that mount it (running or not).
	MountedBy []string `json:"mounted_by"`
	// SharedWith are the users whose sessions may mount it too (as
	// "OWNER_UID/NAME"), each as its own user.
	SharedWith []uint32 `json:"shared_with,omitempty"`
}

// CreateVolumeRequest is the body of POST /v1/volumes.
type CreateVolumeRequest struct {
	// Name is unique among the caller's volumes (docker's rules).
	Name string `json:"name"`
	// SizeMB is its quota: writes past it fail with ENOSPC.
	SizeMB int64 `json:"size_mb"`
	// SharedWith are other users whose sessions may mount it (the owner
	// says so; nobody else's may).
	SharedWith []uint32 `json:"shared_with,omitempty"`
}

// VolumeList is the body of GET /v1/volumes.
type VolumeList struct {
	Volumes []Volume `json:"volumes"`
}

// VolumeMount is a volume a session mounts, at Path, read-only or not.
type VolumeMount struct {
	// Name is the caller's volume, or "OWNER_UID/NAME" one shared with it.
	Name     string `json:"name"`
	Path     string `json:"path"`
	ReadOnly bool   `json:"read_only,omitempty"`
}

// UpdateVolumeRequest is the body of PATCH /v1/volumes/{name}: what the
// owner may change after create.
type UpdateVolumeRequest struct {
	// SharedWith, when present, replaces the users the volume is shared
	// with ([] shares it with no one).
	SharedWith *[]uint32 `json:"shared_with,omitempty"`
}
