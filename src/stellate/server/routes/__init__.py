"""The API's routes, one module per resource, all under ``/v1``."""
