"""Who is calling and what they may do: the request's context, authentication (tokens, OIDC, console sessions,
throttling) and authorization (grants, and the access checks the operations make)."""
