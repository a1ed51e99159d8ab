"""Server-side scan planning: filters, manifests, and the planner that turns them into file scan tasks."""
