package web

// triageRoutes are the dashboard, the quarantine list, error groups and the
// message detail.
func (s *Server) triageRoutes() []Route {
	return nil
}
