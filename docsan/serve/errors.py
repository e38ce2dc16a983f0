"""Errors in OpenAI's shape: ``{"error": {"message", "type", "param", "code"}}``, with the HTTP status.

Every refusal the gateway makes is one of these, raised before anything reaches an upstream;
the app turns any other exception into a 500 of the same shape (the traceback goes to the log,
never to the client).
"""

from __future__ import annotations

from typing import Any

# OpenAI's error types by status.
TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    413: "invalid_request_error",
    500: "server_error",
    502: "upstream_error",
    503: "server_error",
    504: "upstream_error",
}


class ApiError(Exception):
    def __init__(
        self,
        status: int,
        message: str,
        *,
        param: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.code = code
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        return error_body(self.status, self.message, param=self.param, code=self.code)


def error_body(status: int, message: str, *, param: str | None = None, code: str | None = None) -> dict[str, Any]:
    kind = TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}
