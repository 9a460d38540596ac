"""The one network client: downloads into the cache, with retries.

Connection errors, timeouts and 5xx answers are retried with backoff (tenacity), an
interrupted transfer resumes with a Range request, and a file enters the cache only after
its sha256 is checked: a failed or mismatched download leaves nothing behind. Every body is
bounded (SizeLimit): an endless or oversized one stops there, wherever a redirect led.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import cast
from urllib.parse import unquote, urlsplit, urlunsplit

import requests
from tenacity import Retrying

from builder.model.errors import StackbuildError
from builder.model.retry import RetryPolicy
from builder.store.cache import Cache, CacheError
from builder.store.files import CHUNK


def scrub(text: str) -> str:
    """An error message without the credentials and query strings of any URL in it (requests quotes them)."""
    text = re.sub(r"(?i)([a-z][a-z0-9+.-]*://)[^/@\s]+@", r"\1", text)
    return re.sub(r"\?[^\s'\")]*", "?<redacted>", text)


def why(err: BaseException) -> str:
    """A transfer failure in a few words: requests wraps urllib3's reason in its whole retry story."""
    text = scrub(str(err))
    if found := re.search(r"Failed to resolve '([^']+)'", text):
        return f"cannot resolve {found.group(1)}"
    if found := re.search(r"\[Errno -?\d+\] ([^'\")\]]+)", text):
        return found.group(1).strip()
    return text


def redact(url: str) -> str:
    """The URL without user:password@ or query string (URLs go into logs and errors; both may hold tokens)."""
    try:
        parts = urlsplit(url)
        if "@" in parts.netloc:
            parts = parts._replace(netloc=parts.netloc.rpartition("@")[2])
        if parts.query:
            parts = parts._replace(query="<redacted>")
        return urlunsplit(parts)
    except ValueError:
        return "<an unparsable URL>"


class Progress:
    """Download progress as a line every few seconds (downloads of CANN packages take minutes)."""

    def __init__(self, name: str, say: Callable[[str], None], every: float = 5.0) -> None:
        self.name, self.say, self.every = name, say, every
        self.last = time.monotonic()

    def __call__(self, done: int, total: int | None) -> None:
        now = time.monotonic()
        if now - self.last < self.every:
            return
        self.last = now
        share = f"{100 * done / total:.0f}% of {total / 1e6:.0f} MB" if total else f"{done / 1e6:.0f} MB"
        self.say(f"  {self.name}: {share}")


class DownloadError(StackbuildError):
    pass


@dataclass(frozen=True)
class SizeLimit:
    """The most bytes a download may bring: the size the lock records for the file (locked), else the
    site's download_limit. A body is cut off there, and a Content-Length above it refused unread."""

    most: int
    locked: bool = False

    @classmethod
    def of(cls, size: int | None, site_limit: int) -> SizeLimit:
        """The lock's size for the file when it records one, else the site's limit."""
        return cls(size, locked=True) if size is not None else cls(site_limit)

    def exceeded(self, url: str, received: str) -> DownloadError:
        if self.locked:
            return DownloadError(
                f"{redact(url)}: the lock records {self.most} bytes, the server sent {received}: "
                "not the locked file (check the URL and its site rewrite, or relock)"
            )
        return DownloadError(
            f"{redact(url)}: over the site's download_limit of {self.most} bytes ({received}): "
            "raise download_limit in the site configuration if the file is that large"
        )


class Unreachable(DownloadError):
    """The file could not be had from there (no answer, an HTTP error, no such file): another source may have it."""


class NoAnswer(Unreachable):
    """The host gave no answer at all (no connection, no name, HTTP 5xx): an outage, or a host this
    machine does not reach, not a wrong URL. source: the URL as the manifest names it (before site
    rewrites), redacted, for the site-configuration line that points it at a mirror."""

    def __init__(self, message: str, source: str = "") -> None:
        super().__init__(message)
        self.source = redact(source) if source else ""
        self.reason = message


# must_answer's patience: one more try after a short wait, not a download's minute.
PREFLIGHT = RetryPolicy(attempts=2, longest=10.0)


def must_answer(url: str, what: str, source: str) -> None:
    """Raise NoAnswer (naming what needs it) unless url's host answers; before work that would fail
    deep inside another tool (apt, pip, mmdebstrap) with its own words for an outage."""
    if (reason := HttpClient(PREFLIGHT, timeout=10.0).no_answer(url)) is not None:
        raise NoAnswer(f"{what}: {reason}", source)


class _Retryable(Exception):
    """A failure worth another try (connection reset, timeout, 5xx)."""


class _ServerError(_Retryable):
    """HTTP 5xx: the host is there but cannot serve now (501, a method it does not implement, is an answer)."""


def _server_error(status: int) -> None:
    if status >= 500 and status != 501:
        raise _ServerError(f"HTTP {status}")
    if status == 501:
        raise _Retryable(f"HTTP {status}")


def _gave_no_answer(err: BaseException) -> bool:
    """No connection (refused, no route, no name), a timeout, or 5xx: not a TLS failure (a missing CA
    is this machine's setup), a malformed URL or a transfer the host broke off."""
    if isinstance(err, requests.exceptions.SSLError):
        return False
    return isinstance(err, (_ServerError, requests.ConnectionError, requests.Timeout))


def _is_retryable(err: BaseException) -> bool:
    return isinstance(
        err, (_Retryable, requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError)
    )


# Headers to send to each host (host or host:port -> name -> value): a site's own, per host.
HostHeaders = Mapping[str, Mapping[str, str]]


class _HostSession(requests.Session):
    """A session that gives each host its own headers, on redirects too: a redirect to another host
    takes the first host's headers off and puts the new host's on."""

    def __init__(self, by_host: HostHeaders) -> None:
        super().__init__()
        self.by_host = {host.lower(): dict(headers) for host, headers in by_host.items()}
        self.names = {name.lower() for headers in self.by_host.values() for name in headers}

    def of(self, url: str) -> dict[str, str]:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        return self.by_host.get(f"{host}:{parts.port}" if parts.port else host) or self.by_host.get(host, {})

    def rebuild_auth(self, prepared_request: requests.PreparedRequest, response: requests.Response) -> None:
        # requests' own (Authorization off on a host change, netrc's on), untyped in its stubs.
        keep_auth_rules = cast(Callable[[requests.PreparedRequest, requests.Response], None], super().rebuild_auth)
        keep_auth_rules(prepared_request, response)
        for name in [n for n in prepared_request.headers if n.lower() in self.names]:
            del prepared_request.headers[name]
        prepared_request.headers.update(self.of(prepared_request.url or ""))


# Downloads are worth more patience than an engine call: six attempts, waits up to 10 s.
DOWNLOADS = RetryPolicy(attempts=6, longest=10.0)


class HttpClient:
    def __init__(
        self, retry: RetryPolicy = DOWNLOADS, timeout: float = 30.0, headers: HostHeaders | None = None
    ) -> None:
        self.session = _HostSession(headers or {})
        self.session.headers["User-Agent"] = "stackbuild"
        self.retry = retry
        self.timeout = timeout

    def _retrying(self) -> Retrying:
        return self.retry.retrying(_is_retryable)

    def head(self, url: str) -> int | None:
        """Size of the resource at url (None if the server does not say); raises if missing."""

        def attempt() -> int | None:
            resp = self.session.head(url, headers=self.session.of(url), timeout=self.timeout, allow_redirects=True)
            if resp.status_code >= 500:
                raise _Retryable(f"HTTP {resp.status_code}")
            if resp.status_code >= 400:
                raise Unreachable(f"{redact(url)}: HTTP {resp.status_code}")
            length = resp.headers.get("Content-Length")
            return int(length) if length and length.isdigit() else None

        try:
            return self._retrying()(attempt)
        except (_Retryable, requests.RequestException) as err:
            raise Unreachable(f"{redact(url)}: {why(err)} (after {self.retry.attempts} attempts)") from err

    def no_answer(self, url: str) -> str | None:
        """Why url's host gives no answer at all (no connection, no name, HTTP 5xx), or None when it
        answers anything: a 404 is an answer (a wrong URL is the manifest's mistake, said where the
        URL is used), an outage is not. A local path always answers (a missing file is said as such)."""
        if not url.startswith(("http://", "https://")):
            return None

        def attempt() -> None:
            resp = self.session.head(url, headers=self.session.of(url), timeout=self.timeout, allow_redirects=False)
            if resp.status_code >= 500 and resp.status_code != 501:
                raise _ServerError(f"HTTP {resp.status_code}")

        try:
            self._retrying()(attempt)
        except (_Retryable, requests.RequestException) as err:
            if not _gave_no_answer(err):
                return None  # it answered, if only with a failure: said where the URL is used
            return f"{redact(url)}: {why(err)} (after {self.retry.attempts} attempts)"
        return None

    def download(
        self,
        url: str,
        cache: Cache,
        expected_sha256: str | None = None,
        progress: Callable[[int, int | None], None] | None = None,
        headers: Mapping[str, str] | None = None,
        *,
        limit: SizeLimit,
    ) -> str:
        """Download url into the cache (resuming after interruptions); its sha256. headers: sent with
        it wherever it is (a vendor's convention for its packages, as its own downloader sends them).
        limit: the most bytes it may be (more fails at once, never retried)."""
        if expected_sha256 and cache.has(expected_sha256):
            return expected_sha256
        if url.startswith("file://"):
            return self._local(url, cache, expected_sha256, limit)
        with cache.scratch.temp_dir() as tmp:
            part = tmp / "part"
            part.touch()
            pinning = expected_sha256 is None
            try:
                self._retrying()(lambda: self._transfer(url, part, progress, pinning, headers or {}, limit))
            except (_Retryable, requests.RequestException) as err:
                failed = NoAnswer if _gave_no_answer(err) else Unreachable
                raise failed(f"{redact(url)}: {why(err)} (after {self.retry.attempts} attempts)") from err
            except OSError as err:  # a full disk: nothing partial stays behind (the temp dir goes)
                where = cache.root
                raise DownloadError(f"{redact(url)}: cannot write into the cache {where}: {err.strerror}") from err
            try:
                return cache.add_part(part, expected_sha256, redact(url))
            except CacheError as err:
                raise DownloadError(str(err)) from err

    def _local(self, url: str, cache: Cache, expected_sha256: str | None, limit: SizeLimit) -> str:
        """A file:// URL (a site rewrite to a local mirror): copied into the cache, checked the same way."""
        path = Path(unquote(urlsplit(url).path))
        if not path.is_file():
            raise Unreachable(f"{redact(url)}: no such file")
        if (size := path.stat().st_size) > limit.most:
            raise limit.exceeded(url, f"a file of {size} bytes")
        try:
            return cache.add_file(path, expected_sha256)
        except CacheError as err:
            raise DownloadError(str(err)) from err

    def _transfer(
        self,
        url: str,
        part: Path,
        progress: Callable[[int, int | None], None] | None,
        pinning: bool,
        given: Mapping[str, str],
        limit: SizeLimit,
    ) -> None:
        """One attempt: fetch what part lacks (all of it, or the rest with a Range request), never more
        than limit in all."""
        have = part.stat().st_size
        headers = {**given, **self.session.of(url), **({"Range": f"bytes={have}-"} if have else {})}
        unread = {"response": _unread_redirect}
        with self.session.get(url, headers=headers, stream=True, timeout=self.timeout, hooks=unread) as resp:
            mode = _check_answer(resp, have, part)
            size = _expected_size(resp, have if mode == "ab" else 0)
            if size is not None and size > limit.most:
                raise limit.exceeded(url, f"a Content-Length of {size} bytes")
            if size is None and pinning:
                raise DownloadError(
                    f"{redact(url)}: the server sends no Content-Length, so a cut-off transfer would look complete: "
                    "give the package's sha256 in the manifest"
                )
            with part.open(mode) as f:
                for chunk in resp.iter_content(CHUNK):
                    if f.tell() + len(chunk) > limit.most:
                        raise limit.exceeded(url, f"more (stopped at {f.tell() + len(chunk)} bytes)")
                    f.write(chunk)
                    if progress:
                        progress(f.tell(), size)
            got = part.stat().st_size
            if size is not None and got < size:
                raise _Retryable("transfer ended early")
            if size is not None and got > size:
                part.write_bytes(b"")
                raise _Retryable(f"the server sent {got - size} bytes more than it announced: starting again")


def _unread_redirect(resp: requests.Response, *args: object, **kwargs: object) -> requests.Response:
    """A redirect's own body closed unread: requests would read it whole (into memory, however long)
    before following it; only the body of the file counts, against the limit."""
    if resp.is_redirect:
        resp.close()
    return resp


def _check_answer(resp: requests.Response, have: int, part: Path) -> str:
    """The file mode to write the body with ('wb' from the start, 'ab' to resume), or why not to."""
    _server_error(resp.status_code)
    if resp.status_code == 416 and have:
        part.write_bytes(b"")
        raise _Retryable("the server refused to resume (HTTP 416): starting again")
    if resp.status_code >= 400:
        raise Unreachable(f"{redact(resp.url)}: HTTP {resp.status_code}")
    if resp.status_code == 204 or resp.status_code not in (200, 206):
        raise DownloadError(f"{redact(resp.url)}: HTTP {resp.status_code} is not a file")
    if resp.status_code == 200 or not have:
        return "wb"  # a server that ignores Range sends the whole file again
    match = re.fullmatch(r"bytes (\d+)-\d+/(\d+|\*)", resp.headers.get("Content-Range", ""))
    if match is None or int(match.group(1)) != have:
        part.write_bytes(b"")
        raise _Retryable(
            f"the server resumed at {resp.headers.get('Content-Range')!r}, not at byte {have}: starting again"
        )
    return "ab"


def _expected_size(resp: requests.Response, offset: int) -> int | None:
    length = resp.headers.get("Content-Length")
    return int(length) + offset if length and length.isdigit() else None
