package presence

// SetRemote records the presence of a member another node holds (its node
// and connection id in m.Node and m.ID, m.JoinedAt as that node set it), as
// Set does for a local one: a member new to r joins it (leaving its
// previous room first), and r's local members and watchers get `join`
// (when new) and `update`. Events go only to this node's connections; the
// member's own node tells its own.
func (rg *Registry[C]) SetRemote(r Room, m Member[C]) []Event[C] {
	var zero C
	m.Conn = zero
	k := remoteKey{m.Node, m.ID}
	var out []Event[C]
	if cur, ok := rg.remoteIn[k]; ok && cur != r.ID {
		out = rg.LeaveRemote(m.Node, m.ID)
	}
	rm := rg.room(r)
	existing := rm.findRemote(k)
	if existing == nil {
		cp := m
		existing = &cp
		rm.remote = append(rm.remote, existing)
		rg.remoteIn[k] = r.ID
		ids := rg.byNode[m.Node]
		if ids == nil {
			ids = map[string]struct{}{}
			rg.byNode[m.Node] = ids
		}
		ids[m.ID] = struct{}{}
		out = rg.broadcast(rm, Join, existing, out)
	}
	existing.ActorTokenID, existing.Presence, existing.JoinedAt = m.ActorTokenID, m.Presence, m.JoinedAt
	return rg.broadcast(rm, Update, existing, out)
}

// LeaveRemote takes another node's member out of its room, with `leave` to
// the room's local members and watchers. It is a no-op for a member not
// held.
func (rg *Registry[C]) LeaveRemote(node, id string) []Event[C] {
	k := remoteKey{node, id}
	roomID, ok := rg.remoteIn[k]
	if !ok {
		return nil
	}
	delete(rg.remoteIn, k)
	if ids := rg.byNode[node]; ids != nil {
		delete(ids, id)
		if len(ids) == 0 {
			delete(rg.byNode, node)
		}
	}
	rm := rg.rooms[roomID]
	var out []Event[C]
	for i, m := range rm.remote {
		if m.Node == node && m.ID == id {
			out = rg.broadcast(rm, Leave, m, nil)
			rm.remote = append(rm.remote[:i], rm.remote[i+1:]...)
			break
		}
	}
	rg.dropIfEmpty(rm)
	return out
}

// DropNode forgets every member node holds (it stopped), with their
// `leave` events to this node's members and watchers.
func (rg *Registry[C]) DropNode(node string) []Event[C] {
	var out []Event[C]
	for id := range rg.byNode[node] {
		out = append(out, rg.LeaveRemote(node, id)...)
	}
	return out
}

func (rm *room[C]) findRemote(k remoteKey) *Member[C] {
	for _, m := range rm.remote {
		if m.Node == k.node && m.ID == k.id {
			return m
		}
	}
	return nil
}
