"""The forge's record of each push: the time a student's git cannot write.

- GitHub: the repository activity API (``GET /repos/OWNER/REPO/activity``), each push's ``timestamp`` with its
  ``before`` and ``after`` commits (pages by the ``Link`` header). Token: ``GITHUB_TOKEN`` or ``GH_TOKEN``.
- GitLab: the project's push events (``GET /projects/ID/events?action=pushed``), each with ``created_at`` and
  ``push_data`` (``commit_from``, ``commit_to``, ``ref``, ``ref_type``; pages by ``X-Next-Page``). Token:
  ``GITLAB_TOKEN``.

A Push is (time, ref, before, after). A forge that cannot be asked (no token, no such repository, no network), or
whose record is longer than the grader reads (MAX_PAGES pages: pushes to other refs would otherwise push the graded
branch's out of it), raises ForgeError; the caller falls back to its own witnesses and says so in the row.
GitHub is asked for the graded branch's pushes alone (``ref=``); GitLab's events cannot be filtered by ref.
"""
import datetime
import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from typing import NamedTuple

APIS = {"github": "https://api.github.com", "gitlab": "https://gitlab.com/api/v4"}
TOKENS = {"github": ("GITHUB_TOKEN", "GH_TOKEN"), "gitlab": ("GITLAB_TOKEN",)}
MAX_PAGES = 50
TIMEOUT = 30
NEXT = re.compile(r'<([^>]+)>;\s*rel="next"')
ZERO = "0" * 40


class ForgeError(RuntimeError):
    """The forge could not be asked; the message says why and what to set."""


class Push(NamedTuple):
    at: datetime.datetime
    ref: str          # refs/heads/NAME or refs/tags/NAME
    before: str
    after: str        # ZERO when the ref was deleted


def parse_time(text):
    when = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    return when.astimezone(datetime.timezone.utc)


def project_of(url):
    """OWNER/NAME of a clone address (https://host/OWNER/NAME.git or git@host:OWNER/NAME.git)."""
    path = urllib.parse.urlsplit(url).path if "://" in url else url.split(":", 1)[-1]
    path = path.strip("/")
    return path[:-4] if path.endswith(".git") else path


class Forge:
    """One forge's API: `kind` github or gitlab, `api` its base address, the token from the environment; `repo`
    (OWNER/NAME with {username}) where a repository's path on the forge is not its clone address's."""

    def __init__(self, kind, api=None, env=None, repo=None):
        if kind not in APIS:
            raise ForgeError(f"--forge {kind!r}: use github or gitlab")
        env = os.environ if env is None else env
        self.kind, self.api, self.repo = kind, (api or APIS[kind]).rstrip("/"), repo
        self.token = next((env[k] for k in TOKENS[kind] if env.get(k)), None)
        if not self.token:
            raise ForgeError(f"--forge {kind} needs a token that can read the students' repositories: set "
                             f"{' or '.join(TOKENS[kind])}")

    def project(self, username, url):
        """OWNER/NAME of a student's repository on the forge."""
        return self.repo.format(username=username) if self.repo else project_of(url)

    def _get(self, url):
        headers = {"User-Agent": "matmul-grade-repos"}
        if self.kind == "github":
            headers.update({"Authorization": f"Bearer {self.token}", "Accept": "application/vnd.github+json",
                            "X-GitHub-Api-Version": "2022-11-28"})
        else:
            headers["PRIVATE-TOKEN"] = self.token
        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=TIMEOUT) as r:
                return json.loads(r.read(8 << 20).decode("utf-8")), r.headers
        except urllib.error.HTTPError as exc:
            raise ForgeError(f"{self.kind} answered {exc.code} {exc.reason} for {url}") from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise ForgeError(f"could not ask {self.kind} ({url}): {getattr(exc, 'reason', exc)}") from None

    def pushes(self, project, ref=None):
        """[Push] of the repository `project` (OWNER/NAME), oldest first; only those to `ref` (refs/heads/NAME) when
        given. Raises ForgeError when the record is longer than MAX_PAGES pages or not as documented."""
        try:
            return self._pushes(project, ref)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ForgeError(f"{self.kind} answered a record of pushes not as documented ({type(exc).__name__}: "
                             f"{exc})") from None

    def _pushes(self, project, ref):
        if self.kind == "github":
            url = f"{self.api}/repos/{project}/activity?per_page=100"
            url += f"&ref={urllib.parse.quote(ref, safe='')}" if ref else ""
            found = []
            for page_count in range(MAX_PAGES + 1):
                if page_count == MAX_PAGES:
                    raise self._too_long(project)
                page, headers = self._get(url)
                if not isinstance(page, list):
                    raise ForgeError(f"github: {url} did not answer a list of activities")
                for a in page:
                    if isinstance(a, dict) and a.get("activity_type") in ("push", "force_push", "branch_creation",
                                                                          "branch_deletion", "pr_merge",
                                                                          "merge_queue_merge"):
                        found.append(Push(parse_time(a["timestamp"]), a["ref"], a.get("before") or ZERO,
                                          a.get("after") or ZERO))
                m = NEXT.search(headers.get("Link") or "")
                if not m:
                    break
                url = m[1]
        else:
            base = f"{self.api}/projects/{urllib.parse.quote(project, safe='')}/events?action=pushed&per_page=100"
            found, page_no = [], "1"
            for page_count in range(MAX_PAGES + 1):
                if page_count == MAX_PAGES:
                    raise self._too_long(project)
                page, headers = self._get(f"{base}&page={page_no}")
                if not isinstance(page, list):
                    raise ForgeError(f"gitlab: {base} did not answer a list of events")
                for e in page:
                    data = e.get("push_data") if isinstance(e, dict) else None
                    if not data:
                        continue
                    kind = "heads" if data.get("ref_type") == "branch" else "tags"
                    found.append(Push(parse_time(e["created_at"]), f"refs/{kind}/{data['ref']}",
                                      data.get("commit_from") or ZERO, data.get("commit_to") or ZERO))
                page_no = (headers.get("X-Next-Page") or "").strip()
                if not page_no:
                    break
        found = [p for p in found if ref is None or p.ref == ref]
        return sorted(found, key=lambda p: p.at)

    def _too_long(self, project):
        return ForgeError(f"{self.kind} holds more than {MAX_PAGES * 100} pushes for {project}: not all were read, "
                          "so the last push before the deadline cannot be told")
