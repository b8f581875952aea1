"""The peers in ``bench.serving``: what a SageMaker user would put in a container instead of smkit.

- ``gunicorn``: AWS's bring-your-own-container sample: nginx in front of gunicorn's sync workers (a unix
  socket between them) running a Flask app, with the sample's nginx settings
  (https://github.com/aws/amazon-sagemaker-examples/tree/main/advanced_functionality/scikit_bring_your_own,
  ``container/decision_trees/nginx.conf`` and ``serve``). Without an ``nginx`` binary, gunicorn alone
  listens on the port (the run's JSON says which).
- ``fastapi``: FastAPI on uvicorn with ``--workers``.

Both serve the model's own ``code/inference.py`` through :mod:`bench.peer_app`, from one venv of pinned
versions (``bench/.venvs/peers``) that also holds the model's requirements; the worker count is the run's.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from bench.common import LOOPBACK, ServerSpec
from bench.envs import ensure_venv, model_requirements

PEER_PINS = (
    "flask==3.1.3",
    "gunicorn==27.0.1",
    "fastapi==0.165.0",
    "uvicorn==0.54.0",
    "uvloop==0.23.0",
    "httptools==0.9.0",
)
BENCH_DIR = Path(__file__).resolve().parent

# The sample's nginx.conf, with paths of the run's own (no root, nothing under /var).
NGINX_CONF = """{user}worker_processes 1;
daemon off;
pid {work}/nginx.pid;
error_log {work}/nginx-error.log;

events {{
  worker_connections 1024;
}}

http {{
  access_log off;
  client_body_temp_path {work}/body;
  proxy_temp_path {work}/proxy;
  fastcgi_temp_path {work}/fastcgi;
  uwsgi_temp_path {work}/uwsgi;
  scgi_temp_path {work}/scgi;

  upstream gunicorn {{
    server unix:{work}/gunicorn.sock;
  }}

  server {{
    listen {host}:{port} deferred;
    client_max_body_size 5m;

    keepalive_timeout 5;
    proxy_read_timeout 1200s;

    location ~ ^/(ping|invocations) {{
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header Host $http_host;
      proxy_redirect off;
      proxy_pass http://gunicorn;
    }}

    location / {{
      return 404 "{{}}";
    }}
  }}
}}
"""


def peers_python(model_dir: Path) -> Path:
    """The peers' venv python: the pins above and the model's own requirements."""
    return ensure_venv("peers", [*PEER_PINS, *model_requirements(model_dir)])


def nginx_binary() -> str | None:
    return shutil.which("nginx") or next(
        (p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if Path(p).is_file()), None
    )


def gunicorn_spec(*, name: str, model_dir: Path, work_dir: Path, port: int, workers: int) -> ServerSpec:
    """nginx + gunicorn (sync workers, the sample's 60 s timeout) + Flask, as the sample's ``serve`` runs them."""
    python = peers_python(model_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    env = {"PEER_MODEL_DIR": str(model_dir), "PEER_SERVER": "flask", "PYTHONPATH": str(BENCH_DIR)}
    gunicorn = [str(python), "-m", "gunicorn", "--timeout", "60", "-k", "sync", "-w", str(workers)]
    nginx = nginx_binary()
    if nginx is None:
        argv = [*gunicorn, "-b", f"{LOOPBACK}:{port}", "peer_app:flask_app"]
        return ServerSpec(name=name, argv=argv, port=port, env=env, cwd=work_dir)
    # As root (a container's default), nginx's workers would run as nobody and could not reach the socket.
    user = "user root;\n" if os.geteuid() == 0 else ""
    (work_dir / "nginx.conf").write_text(
        NGINX_CONF.format(user=user, work=work_dir, host=LOOPBACK, port=port)
    )
    gunicorn += ["-b", f"unix:{work_dir}/gunicorn.sock", "peer_app:flask_app"]
    # The sample's ``serve`` starts both and stops when either exits; the benchmark stops the whole session.
    script = f"{nginx} -c {work_dir}/nginx.conf -p {work_dir} & exec {' '.join(gunicorn)}"
    return ServerSpec(name=name, argv=["/bin/sh", "-c", script], port=port, env=env, cwd=work_dir)


def fastapi_spec(*, name: str, model_dir: Path, work_dir: Path, port: int, workers: int) -> ServerSpec:
    """FastAPI on uvicorn (uvloop, httptools), ``workers`` processes."""
    python = peers_python(model_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    env = {"PEER_MODEL_DIR": str(model_dir), "PEER_SERVER": "fastapi", "PYTHONPATH": str(BENCH_DIR)}
    argv = [str(python), "-m", "uvicorn", "peer_app:fastapi_app", "--host", LOOPBACK, "--port", str(port)]
    argv += ["--workers", str(workers), "--no-access-log"]
    return ServerSpec(name=name, argv=argv, port=port, env=env, cwd=work_dir)
