"""Views below the catalog: the view service and view commits."""
