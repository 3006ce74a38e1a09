"""The wire contract: pydantic schemas for every request, result and job, the error codes, the HTTP client.
Imports no maths."""
