"""The fake Slack's files (a mixin of `FakeSlack`): hosted files served at
`url_private_download` only with the bot token as Bearer (403 otherwise, as for a
token without files:read), scripted download failures, and the upload flow of
slack_sdk's `files_upload_v2`: files.getUploadURLExternal, the POST of the bytes to the
returned URL, files.completeUploadExternal (sharing into channel_id / thread_ts), and
files.info telling whether a file was shared.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import quote

from aiohttp import web

from tests.fakes.slack_ids import TEAM


class FilesApi:
    def file(self, name: str, data: bytes, mimetype: str = "text/plain", **extra: Any) -> dict:
        """Host `data` and return the file object a message event carries."""
        file_id = f"F{next(self._file_ids):06d}"
        self.hosted[file_id] = (data, mimetype)
        quoted = quote(name or "file", safe="")
        url = f"http://127.0.0.1:{self.port}/files-pri/{TEAM}-{file_id}/{quoted}"
        obj = {
            "id": file_id,
            "name": name,
            "title": name,
            "mimetype": mimetype,
            "filetype": name.rsplit(".", 1)[-1],
            "size": len(data),
            "mode": "hosted",
            "url_private": url,
            "url_private_download": url + "?download=1",
        }
        obj.update(extra)
        return obj

    def fail_download(self, file_id: str, status: int = 500, times: int = 1) -> None:
        self.download_failures.setdefault(file_id, []).extend([status] * times)

    async def _download(self, request: web.Request) -> web.Response:
        file_id = request.match_info["id"].rsplit("-", 1)[-1]
        token = request.headers.get("Authorization", "").removeprefix("Bearer ")
        self.downloads.append((file_id, token))
        self._notify()
        if file_id in self.gated and not self.downloads_open.is_set():
            await asyncio.to_thread(self.downloads_open.wait, 30)
        failures = self.download_failures.get(file_id)
        if failures:
            return web.Response(status=failures.pop(0), text="scripted failure")
        if file_id not in self.hosted or not token.startswith("xoxb-"):
            return web.Response(status=403, text="forbidden")
        data, mimetype = self.hosted[file_id]
        return web.Response(body=data, content_type=mimetype)

    async def _files_getUploadURLExternal(
        self, params: dict[str, Any], token: str
    ) -> tuple[dict, dict]:
        if not params.get("filename") or not params.get("length"):
            return {"ok": False, "error": "invalid_arguments"}, {}
        file_id = f"F{next(self._file_ids):06d}"
        self.pending_uploads[file_id] = {"name": params["filename"], "data": None}
        url = f"http://127.0.0.1:{self.port}/upload/{file_id}"
        return {"ok": True, "upload_url": url, "file_id": file_id}, {}

    async def _upload_bytes(self, request: web.Request) -> web.Response:
        pending = self.pending_uploads.get(request.match_info["id"])
        if pending is None:
            return web.Response(status=404, text="unknown upload")
        pending["data"] = await request.read()
        return web.Response(text="OK - " + str(len(pending["data"])))

    async def _files_completeUploadExternal(
        self, params: dict[str, Any], token: str
    ) -> tuple[dict, dict]:
        files = params.get("files")
        files = json.loads(files) if isinstance(files, str) else files
        ids = [f["id"] for f in files or []]
        if not ids or any(self.pending_uploads.get(i, {}).get("data") is None for i in ids):
            return {"ok": False, "error": "file_not_found"}, {}
        upload = {
            "files": [{**self.pending_uploads.pop(i), "id": i} for i in ids],
            "channel": params.get("channel_id"),
            "thread_ts": params.get("thread_ts"),
            "initial_comment": params.get("initial_comment"),
        }
        self.uploads.append(upload)
        self.sent_in(str(upload["channel"]), upload["thread_ts"])  # type: ignore[attr-defined]
        self._notify()
        if not self.completes_open.is_set():  # shared; the client may die before it hears so
            await asyncio.to_thread(self.completes_open.wait, 60)
        if self.fail_after_complete:  # done, but the client hears a failure
            self.fail_after_complete -= 1
            return {"ok": False, "error": "internal_error"}, {}
        return {"ok": True, "files": [{"id": i, "title": i} for i in ids]}, {}

    async def _files_info(self, params: dict[str, Any], token: str) -> tuple[dict, dict]:
        file_id = str(params.get("file"))
        if file_id in self.hosted:  # a file people shared (Slack Connect asks for its link)
            data, mimetype = self.hosted[file_id]
            url = f"http://127.0.0.1:{self.port}/files-pri/{TEAM}-{file_id}/file"
            found = {"id": file_id, "size": len(data), "mimetype": mimetype}
            return {"ok": True, "file": {**found, "url_private_download": url}}, {}
        for upload in self.uploads:
            if any(f["id"] == file_id for f in upload["files"]):
                share = {"ts": self.next_ts(), "thread_ts": upload["thread_ts"]}
                shares = {"public": {upload["channel"]: [share]}}
                return {"ok": True, "file": {"id": file_id, "shares": shares}}, {}
        if file_id in self.pending_uploads:
            return {"ok": True, "file": {"id": file_id, "shares": {}}}, {}
        return {"ok": False, "error": "file_not_found"}, {}
