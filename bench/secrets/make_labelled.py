"""Writes ``labelled.jsonl``: lines a coding agent's memory sees (messages, commands, tool
output), each labelled secret or not, with the exact substring that must not be kept.

Written by hand before the detector was changed, so the set is not tuned to it: secrets
of the shapes people paste (provider keys, keyword assignments, credential pairs in
prose, URLs with passwords, auth headers, printed config files) and look-alikes that a
memory must keep whole (hashes, digests, UUIDs, flags, version strings, ids, paths,
references to a secret that are not one). Token bodies are random from a fixed seed, so
the file is the same on every run: ``python bench/secrets/make_labelled.py``.
"""
from __future__ import annotations

import json
import random
import string
from pathlib import Path

rng = random.Random(20261202)
AN = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
B64 = AN + "+/"


def r(n: int, alphabet: str = AN) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def up(n: int) -> str:
    return r(n, string.ascii_uppercase + string.digits)


# (kind, text, secret substring) — secret None: the line holds none and must stay whole.
S: list[tuple[str, str, str | None]] = []


def sec(kind: str, text: str, secret: str) -> None:
    assert secret in text, text
    S.append((kind, text, secret))


def ok(kind: str, text: str) -> None:
    S.append((kind, text, None))


# -- secrets: provider keys ----------------------------------------------------------------
k = "sk-" + r(48); sec("message", f"here is my openai key {k}, use it for the eval", k)
k = "sk-proj-" + r(64, AN + "-_"); sec("command", f"export OPENAI_API_KEY={k}", k)
k = "sk-ant-api03-" + r(80, AN + "-_") + "AA"; sec("tool_output", f"ANTHROPIC_API_KEY={k}", k)
k = "AKIA" + up(16); sec("tool_output", f"aws_access_key_id = {k}", k)
k = "AKIA" + up(16); sec("message", f"the access key id is {k} (the deploy user)", k)
k = r(40, AN + "/+"); sec("tool_output", f"aws_secret_access_key = {k}", k)
k = r(40, AN + "/+"); sec("command", f"export AWS_SECRET_ACCESS_KEY={k}", k)
k = "ghp_" + r(36); sec("message", f"my github token: {k}", k)
k = "ghp_" + r(36); sec("command", f"git clone https://{k}@github.com/acme/api.git", k)
k = "github_pat_" + r(22) + "_" + r(59); sec("tool_output", f"GH_TOKEN={k}", k)
k = "gho_" + r(36); sec("tool_output", f'{{"oauth_token": "{k}", "user": "octo"}}', k)
k = "glpat-" + r(20, AN + "-_"); sec("command", f"curl --header 'PRIVATE-TOKEN: {k}' https://gitlab.example.com/api/v4/projects", k)
k = "xoxb-" + "-".join([str(rng.randint(10**10, 10**11)), str(rng.randint(10**10, 10**11)), r(24)]); sec("message", f"slack bot token for the alerts channel is {k}", k)
k = "xoxp-" + "-".join([str(rng.randint(10**10, 10**11)), str(rng.randint(10**10, 10**11)), r(32, HEX)]); sec("tool_output", f"SLACK_TOKEN={k}", k)
k = "sk_live_" + r(24); sec("tool_output", f"STRIPE_SECRET_KEY={k}", k)
k = "sk_test_" + r(24); sec("message", f"use the stripe test key {k} in the fixtures", k)
k = "rk_live_" + r(24); sec("command", f"stripe listen --api-key {k}", k)
k = "AIza" + r(35, AN + "-_"); sec("tool_output", f'  "apiKey": "{k}",', k)
k = "AIza" + r(35, AN + "-_"); sec("message", f"maps key {k} is restricted to our domain", k)
k = "npm_" + r(36); sec("tool_output", f"//registry.npmjs.org/:_authToken={k}", k)
k = "pypi-AgEIcHlwaS5vcmc" + r(60, AN + "-_"); sec("tool_output", f"password = {k}", k)
k = "SG." + r(22, AN + "-_") + "." + r(43, AN + "-_"); sec("command", f"export SENDGRID_API_KEY={k}", k)
k = "SK" + r(32, HEX); sec("tool_output", f"TWILIO_API_KEY={k}", k)
k = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiI" + r(30) + ".";
k += r(43, AN + "-_"); sec("tool_output", f"Set-Cookie: session={k}; HttpOnly", k)
k = "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJ" + r(40) + "." + r(86, AN + "-_"); sec("message", f"the jwt from the login response was {k}", k)
k = "-----BEGIN RSA PRIVATE KEY-----"; sec("tool_output", f"{k} MIIEpAIBAAKCAQEA{r(40, B64)}", k)
k = "-----BEGIN OPENSSH PRIVATE KEY-----"; sec("tool_output", f"$ cat ~/.ssh/id_ed25519 {k} b3BlbnNzaC1rZXktdjEAAAAA{r(30, B64)}", k)
k = str(rng.randint(10**9, 10**10)) + ":AA" + r(33, AN + "-_"); sec("message", f"telegram bot token {k}", k)
k = r(24, AN) + "." + r(6, AN + "-_") + "." + r(27, AN + "-_"); sec("tool_output", f"DISCORD_BOT_TOKEN={k}", k)
k = r(86, B64) + "=="; sec("tool_output", f"DefaultEndpointsProtocol=https;AccountName=acmelogs;AccountKey={k};EndpointSuffix=core.windows.net", k)
k = "dop_v1_" + r(64, HEX); sec("command", f"doctl auth init --access-token {k}", k)
k = "hf_" + r(34); sec("message", f"HF token is {k}, it only has read scope", k)
k = "shpat_" + r(32, HEX); sec("tool_output", f"SHOPIFY_ACCESS_TOKEN={k}", k)
k = "glc_" + r(40, AN + "="); sec("tool_output", f"grafana_cloud_token: {k}", k)

# -- secrets: keyword assignments ----------------------------------------------------------
for kind, text, secret in [
    ("message", "the staging db password is Sup3rS3cret!2024", "Sup3rS3cret!2024"),
    ("message", "password for the admin panel: correct-horse-battery-9", "correct-horse-battery-9"),
    ("message", "our wifi pass is Fr0gP0nd#Lily", "Fr0gP0nd#Lily"),
    ("message", "root password = toor!Prod88", "toor!Prod88"),
    ("message", "pw for the vpn is Gx7!kq2Lmz", "Gx7!kq2Lmz"),
    ("message", "the passphrase on the deploy key is 'blue-otter-sings-at-dawn'", "blue-otter-sings-at-dawn"),
    ("command", "mysql -u root -pHunter2Hunter2 app_db", "Hunter2Hunter2"),
    ("command", "export DB_PASSWORD=pg_Xq93!mLa", "pg_Xq93!mLa"),
    ("command", "docker run -e POSTGRES_PASSWORD=Qm8vTt2wZp -d postgres:16", "Qm8vTt2wZp"),
    ("command", "MYSQL_ROOT_PASSWORD='b7#Fw!9zLq' docker compose up -d", "b7#Fw!9zLq"),
    ("command", "sshpass -p 'N0tMyR3alPw' ssh deploy@10.0.3.7", "N0tMyR3alPw"),
    ("command", "htpasswd -b .htpasswd admin Adm1nPassw0rd", "Adm1nPassw0rd"),
    ("command", "redis-cli -a rEd1sP4ss -h cache.internal ping", "rEd1sP4ss"),
    ("command", "psql \"host=db.internal user=app password=Lk2m9Qx7 dbname=app\"", "Lk2m9Qx7"),
    ("command", "echo 'S3cr3tV4lue-Key' | docker login -u ci --password-stdin registry.example.com", "S3cr3tV4lue-Key"),
    ("tool_output", "DB_PASSWORD=devpass123!", "devpass123!"),
    ("tool_output", 'password: "wmA9!fQ2zR"', "wmA9!fQ2zR"),
    ("tool_output", '  "password": "Tz8#p1Lw0q",', "Tz8#p1Lw0q"),
    ("tool_output", "spring.datasource.password=Oracle_Pass_42", "Oracle_Pass_42"),
    ("tool_output", "SECRET_KEY = 'django-insecure-7f#k2@x!q9m$w3z&v1b^n8c'", "django-insecure-7f#k2@x!q9m$w3z&v1b^n8c"),
    ("tool_output", "client_secret: 8Qw~Zr3Yp.Lm7-Xk2_Vn9sTb4Hc6Jd1Gf0", "8Qw~Zr3Yp.Lm7-Xk2_Vn9sTb4Hc6Jd1Gf0"),
    ("tool_output", "api_key = \"" + (kk := r(32, HEX)) + "\"", kk),
    ("tool_output", "SECRET_KEY_BASE=" + (kk := r(128, HEX)), kk),
    ("tool_output", "WEBHOOK_SECRET=whsec_" + (kk := r(32)), "whsec_" + kk),
    ("tool_output", "token: " + (kk := r(40, HEX)), kk),
    ("message", "the api key for the weather service is " + (kk := r(32, HEX)), kk),
    ("message", "auth token: " + (kk := r(28)), kk),
    ("tool_output", "ENCRYPTION_KEY=" + (kk := r(44, B64)), kk),
    ("command", "export JWT_SECRET=" + (kk := r(48)), kk),
    ("tool_output", "<add key=\"ApiSecret\" value=\"" + (kk := r(30)) + "\" />", kk),
    ("tool_output", "secret_access_key: " + (kk := r(40, AN + "/+")), kk),
    ("message", "set the secret to " + (kk := r(26)) + " in the vault", kk),
    ("tool_output", "x-api-key: " + (kk := r(40)), kk),
    ("tool_output", "PGPASSWORD=Pg!9xwLm2", "Pg!9xwLm2"),
    ("tool_output", "machine api.heroku.com login me@example.com password " + (kk := r(36, HEX + "-")), kk),
    ("tool_output", "registry.example.com:_password=" + (kk := r(24, B64)), kk),
]:
    sec(kind, text, secret)

# -- secrets: credential pairs and passwords in prose --------------------------------------
for kind, text, secret in [
    ("message", "admin creds, admin / Tr0ub4dor-Staging-7", "Tr0ub4dor-Staging-7"),
    ("message", "login for the test box: deploy / Winter2024!", "Winter2024!"),
    ("message", "creds are bob:Hunter2-Hunter2 for the jenkins ui", "Hunter2-Hunter2"),
    ("message", "username alice, password Xk9#mP2$vL", "Xk9#mP2$vL"),
    ("message", "use ci-bot with Qp7-Zr4-Wm2 to log in to the grafana", "Qp7-Zr4-Wm2"),
    ("message", "sign in as root, pw toor123! (only on the lab vm)", "toor123!"),
    ("message", "the credentials are operator and Blu3Sky$Rain", "Blu3Sky$Rain"),
    ("message", "account: svc-backup, secret: Mx4!tR8#qL", "Mx4!tR8#qL"),
    ("message", "log in with admin/admin123 on the router", "admin123"),
    ("message", "it's user postgres and password Pa55w0rd-Dev on localhost", "Pa55w0rd-Dev"),
    ("message", "staging login is qa@example.com / Qa!Test2025", "Qa!Test2025"),
    ("message", "The admin password got rotated, it's now Kestrel-Mango-31", "Kestrel-Mango-31"),
    ("message", "keycloak admin creds: kcadmin, Kc!9vQ2m", "Kc!9vQ2m"),
    ("tool_output", "Username: deploy  Password: 7hG!x2Qz9", "7hG!x2Qz9"),
    ("tool_output", "Generated password for user 'elastic': Zq2_vL9xMw4Tn8Rb", "Zq2_vL9xMw4Tn8Rb"),
    ("tool_output", "Your temporary password is: rT5#mK8pQw", "rT5#mK8pQw"),
]:
    sec(kind, text, secret)

# -- secrets: URLs with passwords, auth headers --------------------------------------------
for kind, text, secret in [
    ("command", "export DATABASE_URL=postgres://app:pg9Lmx2Q@db.internal:5432/app", "pg9Lmx2Q"),
    ("tool_output", "DATABASE_URL=mysql://root:My5qlR00t!@127.0.0.1:3306/shop", "My5qlR00t!"),
    ("tool_output", "REDIS_URL=redis://:r3d1sPw-9x@cache:6379/0", "r3d1sPw-9x"),
    ("message", "the broker is amqp://guest:g7Hk2pQx@rabbit.internal:5672/", "g7Hk2pQx"),
    ("tool_output", "origin\thttps://ci-bot:" + (kk := "ghp_" + r(36)) + "@github.com/acme/web.git (fetch)", kk),
    ("command", "pip install --index-url https://user:" + (kk := r(20)) + "@pypi.acme.internal/simple pkg", kk),
    ("command", "export HTTPS_PROXY=http://jdoe:Pr0xyPa55@proxy.corp:3128", "Pr0xyPa55"),
    ("tool_output", "SENTRY_DSN=https://" + (kk := r(32, HEX)) + "@o123456.ingest.sentry.io/4505", kk),
    ("tool_output", "mongodb+srv://admin:M0ng0Adm1n@cluster0.ab1cd.mongodb.net/test", "M0ng0Adm1n"),
    ("command", "curl -H 'Authorization: Bearer " + (kk := r(40, AN + "._-")) + "' https://api.example.com/v1/me", kk),
    ("tool_output", "Authorization: Basic " + (kk := "YWRtaW46c2VjcmV0LXBhc3N3b3JkLTk5"), kk),
    ("command", "curl -u admin:Adm!n2024 https://jenkins.internal/api/json", "Adm!n2024"),
    ("command", "wget --user=dev --password=D3vW3bPw http://files.internal/build.tar", "D3vW3bPw"),
    ("tool_output", "Cookie: sessionid=" + (kk := r(32, string.ascii_lowercase + string.digits)), kk),
]:
    sec(kind, text, secret)

# -- look-alikes that must stay whole ------------------------------------------------------
for kind, text in [
    ("message", "NODE_OPTIONS=--max-old-space-size=4096 fixed the out of memory in the build"),
    ("command", "NODE_OPTIONS=--max-old-space-size=4096 npm run build"),
    ("command", "JAVA_OPTS=-Xmx4g -XX:+UseG1GC -XX:MaxGCPauseMillis=200 ./gradlew test"),
    ("command", "CFLAGS='-O2 -march=x86-64-v3 -fno-omit-frame-pointer' make -j8"),
    ("command", "RUSTFLAGS=-Ctarget-cpu=native cargo build --release"),
    ("command", "PYTHONDONTWRITEBYTECODE=1 PYTHONHASHSEED=0 pytest -x -q tests/test_api.py"),
    ("command", "docker run -e NODE_ENV=production -p 8080:80 nginx:1.25.3-alpine3.18"),
    ("command", "kubectl rollout restart deployment/web-frontend-v2 -n staging-eu-west-1"),
    ("command", "git checkout -b fix/JIRA-4821-null-pointer-in-OrderService"),
    ("command", "git cherry-pick 3f2a9c1e5b7d8a0f4e6c2b1a9d8e7f6c5b4a3921"),
    ("command", "git rebase -i HEAD~3 && git push --force-with-lease origin feature/login-v2"),
    ("command", "npm install --save-dev eslint@8.57.0 @typescript-eslint/parser@7.2.0"),
    ("command", "pip install 'numpy>=1.26,<2' torch==2.3.1+cu121 --extra-index-url https://download.pytorch.org/whl/cu121"),
    ("command", "ssh-keygen -t ed25519 -C alice@example.com -f ~/.ssh/id_ed25519_work"),
    ("command", "openssl rand -hex 32 > .env.example.generated"),
    ("command", "export PATH=$HOME/.cargo/bin:$HOME/.local/bin:$PATH"),
    ("command", "git log --format='%H %an %s' -n 20 -- src/auth/password_reset.py"),
    ("command", "aws s3 cp s3://acme-build-artifacts/releases/2024-06-12/app-v3.4.1-linux-amd64.tar.gz ."),
    ("command", "aws sts assume-role --role-arn arn:aws:iam::123456789012:role/DeployRole --role-session-name ci"),
    ("command", "terraform plan -var-file=envs/prod-us-east-1.tfvars -out=plan-2024-06-12.bin"),
    ("command", "helm upgrade --install web ./charts/web --set image.tag=v3.4.1-7f3c2d1"),
    ("command", "docker pull ghcr.io/acme/api@sha256:9b2f1c3e4d5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c"),
    ("command", "python -m pip download --no-deps -d /tmp/wheels detect-secrets==1.5.0"),
    ("command", "cargo add serde --features derive && cargo add tokio@1.38 --features full"),
    ("command", "go get github.com/stretchr/testify@v1.9.0"),
    ("command", "sed -i 's/max_connections = 100/max_connections = 400/' /etc/postgresql/16/main/postgresql.conf"),
    ("command", "find . -name '*.pyc' -delete && rm -rf build/ dist/ *.egg-info"),
    ("command", "echo $GITHUB_TOKEN | gh auth login --with-token"),
    ("command", "read -s -p 'Password: ' DB_PASSWORD && export DB_PASSWORD"),
    ("command", "docker login -u ci --password-stdin registry.example.com < /run/secrets/registry"),
    ("command", "psql \"$DATABASE_URL\" -c 'select count(*) from users'"),
    ("command", "curl -H \"Authorization: Bearer $API_TOKEN\" https://api.example.com/v1/me"),
    ("command", "uvicorn app.main:app --host 0.0.0.0 --port 8000 --workers 4"),
    ("command", "jest --testNamePattern='password reset sends an email' --runInBand"),
    ("command", "pytest tests/test_password_hashing.py::test_bcrypt_roundtrip_with_cost_12"),
    ("command", "make test ARGS='--maxfail=1 --durations=10'"),
    ("command", "grep -rn 'api_key' src/ --include=*.py"),
    ("tool_output", "commit 3f2a9c1e5b7d8a0f4e6c2b1a9d8e7f6c5b4a3921"),
    ("tool_output", "Merge: 7f3c2d1 a9e8b7c"),
    ("tool_output", "sha256sum: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  empty.txt"),
    ("tool_output", "Digest: sha256:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945"),
    ("tool_output", '"integrity": "sha512-Tz2vT0eU6OYV8zQ0aDgP5uYmKqG1fG1Zx1wX9e3x6S7lD3eWQ0zF6b2hJrQvN8cY4kP1mW5sD7gH9jL2nB4vA=="'),
    ("tool_output", "request id 7c9e6679-7425-40de-944b-e07fc1f90ae7 failed with 503"),
    ("tool_output", "trace_id=4bf92f3577b34da6a3ce929d0e0e4736 span_id=00f067aa0ba902b7"),
    ("tool_output", "container 4d5e6f7a8b9c exited with code 137 (OOMKilled)"),
    ("tool_output", "pod/web-frontend-7d9f8b6c5d-x2k9p   0/1   CrashLoopBackOff   5   3m12s"),
    ("tool_output", "Successfully installed fastapi-0.111.0 pydantic-2.7.4 pydantic_core-2.18.4 starlette-0.37.2"),
    ("tool_output", "node v20.11.1, npm 10.2.4, pnpm 9.1.0"),
    ("tool_output", "Python 3.11.7 (main, Dec  8 2023, 18:56:58) [GCC 11.4.0] on linux"),
    ("tool_output", "warning: version 1.2.3-rc.1+build.20240612.abc123 is a pre-release"),
    ("tool_output", "FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory"),
    ("tool_output", "Error: ENOENT: no such file or directory, open '/home/dev/app/config/settings.local.json'"),
    ("tool_output", "ModuleNotFoundError: No module named 'cryptography.hazmat.bindings._rust'"),
    ("tool_output", "passwd: password updated successfully"),
    ("tool_output", "Password: "),
    ("tool_output", "WARNING! Using --password via the CLI is insecure. Use --password-stdin."),
    ("tool_output", "Login Succeeded"),
    ("tool_output", "token expired at 2024-06-12T10:31:22Z; refreshing"),
    ("tool_output", "AssertionError: expected status 401 for a wrong password, got 500"),
    ("tool_output", "FAILED tests/test_auth.py::test_login_rejects_bad_password - KeyError: 'password'"),
    ("tool_output", "E   KeyError: 'SECRET_KEY' (is it set in the environment?)"),
    ("tool_output", "src/settings.py:14: SECRET_KEY = os.environ['DJANGO_SECRET_KEY']"),
    ("tool_output", "src/db.py:8:    password=os.getenv('DB_PASSWORD'),"),
    ("tool_output", "config/database.yml:5:  password: <%= ENV['DATABASE_PASSWORD'] %>"),
    ("tool_output", "docker-compose.yml:12:      POSTGRES_PASSWORD: ${POSTGRES_PASSWORD}"),
    ("tool_output", "values.yaml:40:  existingSecret: web-db-credentials"),
    ("tool_output", "api_key = settings.WEATHER_API_KEY"),
    ("tool_output", "password = getpass.getpass()"),
    ("tool_output", "max_tokens=4096, temperature=0.2, top_p=0.95"),
    ("tool_output", "Tokenizer loaded: 50257 tokens, bos_token_id=50256"),
    ("tool_output", "arn:aws:lambda:eu-west-1:123456789012:function:image-resizer-prod"),
    ("tool_output", "i-0abcd1234efgh5678  t3.medium  running  eu-west-1b"),
    ("tool_output", "sg-0123456789abcdef0  vpc-0a1b2c3d  subnet-0fedcba9876543210"),
    ("tool_output", "  at com.acme.billing.InvoiceServiceImpl.computeTaxes(InvoiceServiceImpl.java:214)"),
    ("tool_output", "/usr/lib/x86_64-linux-gnu/libssl.so.3: version `OPENSSL_3.2.0' not found"),
    ("tool_output", "Listening on http://127.0.0.1:5173/ (vite v5.2.11)"),
    ("tool_output", "ETag: \"33a64df551425fcc55e4d42a148795d9f25f89d4\""),
    ("tool_output", "color: #3f2a9c; background: #f7f7f9; border: 1px solid #e1e4e8;"),
    ("tool_output", "aGVsbG8gd29ybGQ= is the base64 of the greeting in the fixture"),
    ("tool_output", "user alice@example.com logged in from 203.0.113.42"),
    ("tool_output", "ssh: connect to host git@github.com port 22: Connection timed out"),
    ("tool_output", "postgres://localhost:5432/app_test is up"),
    ("tool_output", "https://github.com/acme/web/pull/4821/files#diff-7a1b2c3d4e5f"),
    ("tool_output", "Downloading https://files.pythonhosted.org/packages/9f/2c/3a1e5b7d/requests-2.32.3-py3-none-any.whl"),
    ("tool_output", "lockfile: pnpm-lock.yaml (lockfileVersion: '9.0')"),
    ("tool_output", "test_session_token_rotates_after_login PASSED [ 42%]"),
    ("tool_output", "HttpClientFactoryBuilderV2Impl.java compiled in 2.3s"),
    ("tool_output", "warning: unused variable `access_token_ttl_secs` at src/auth.rs:88"),
    ("tool_output", "x-request-id: 01HZX3K7Q9M2V8B4T6N1C5R0WD"),
    ("message", "the build runs out of memory; NODE_OPTIONS=--max-old-space-size=8192 might help"),
    ("message", "don't commit the password, put it in the vault and read it from DB_PASSWORD"),
    ("message", "the password reset email is never sent on staging"),
    ("message", "rotate the api key every 90 days, the ticket is SEC-2291"),
    ("message", "the token expiry should be 15 minutes, not 15 hours"),
    ("message", "we use bcrypt with cost 12 for password hashes"),
    ("message", "the secret is stored in AWS Secrets Manager under prod/web/db"),
    ("message", "login fails with a 401 when the password has a colon in it"),
    ("message", "our creds live in 1Password, ask Dana for access to the Infra vault"),
    ("message", "the admin user is admin, its password comes from ADMIN_PASSWORD"),
    ("message", "commit 7f3c2d1 broke the login form"),
    ("message", "pin torch to 2.3.1+cu121 and numpy below 2.0"),
    ("message", "the failing pod is web-frontend-7d9f8b6c5d-x2k9p in staging"),
    ("message", "use uuid 123e4567-e89b-12d3-a456-426614174000 as the tenant in the fixture"),
    ("message", "the trace for the slow request is 4bf92f3577b34da6a3ce929d0e0e4736"),
    ("message", "run with --max-old-space-size=4096 and --stack-size=65500"),
    ("message", "set -Xss4m -Xmx2g for the annotation processor"),
    ("message", "the cluster is eks-prod-eu-west-1-v2, context arn:aws:eks:eu-west-1:123456789012:cluster/prod"),
    ("message", "install dependencies with pnpm, never npm"),
    ("message", "the deploy script is bin/ship and it needs make deps first"),
    ("message", "our API base url is https://api.example.com/v1 and the port is 8443"),
    ("message", "the flaky test is test_token_refresh_race in tests/auth/test_tokens.py"),
    ("message", "the sha of the release is e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
    ("message", "version 3.4.1-7f3c2d1 is the one on prod"),
    ("message", "passwords must be at least 12 characters with one digit"),
    ("message", "the key rotation job runs at 02:00 UTC"),
    ("message", "ask for the password in person, never paste it here"),
]:
    ok(kind, text)

# -- the held-out part: written after the detector was built, measured, never tuned on --
DEV = len(S)
k = "sk-" + r(48); sec("tool_output", f"OPENAI_KEY: {k}", k)
k = "ghs_" + r(36); sec("tool_output", f"GITHUB_TOKEN={k} (expires in 1 hour)", k)
k = "AKIA" + up(16); sec("tool_output", f"[default]\\naws_access_key_id={k}", k)
k = "xoxb-" + str(rng.randint(10**10, 10**11)) + "-" + r(24); sec("command", f"curl -d token={k} https://slack.com/api/auth.test", k)
k = "sk_live_" + r(30); sec("message", f"prod stripe: {k}", k)
k = "glpat-" + r(20); sec("tool_output", f"CI_JOB_TOKEN_OVERRIDE={k}", k)
k = r(32, HEX); sec("tool_output", f"MAILGUN_API_KEY=key-{k}", k)
k = r(40); sec("command", f"vercel deploy --token {k}", k)
k = r(64, HEX); sec("tool_output", f"export CLOUDFLARE_API_TOKEN={k}", k)
k = "eyJhbGciOiJIUzI1NiJ9.eyJ1c2VyIjo" + r(30) + "." + r(43, AN + "_-"); sec("command", f"http GET :8000/me 'Authorization:Bearer {k}'", k)
for kind, text, secret in [
    ("message", "the jenkins admin password is now Falcon!Rise2031", "Falcon!Rise2031"),
    ("message", "ftp login: uploader / Upl0ad-Only-22", "Upl0ad-Only-22"),
    ("message", "for the demo account use demo@acme.io with password Demo#2025x", "Demo#2025x"),
    ("message", "grafana creds admin:Gr4fana!Ops", "Gr4fana!Ops"),
    ("message", "the vault unseal key is 7Hx2-Kp9w-Qm4z-Lr8t", "7Hx2-Kp9w-Qm4z-Lr8t"),
    ("message", "db user is reporting, pass R3port$Only", "R3port$Only"),
    ("message", "my sudo password is pa$$w0rd99, please don't keep it", "pa$$w0rd99"),
    ("command", "mysqldump -u backup -pBkp_2024_Secure shop > shop.sql", "Bkp_2024_Secure"),
    ("command", "export SMTP_PASSWORD='m4il-Relay!Pw'", "m4il-Relay!Pw"),
    ("command", "docker run -e MINIO_ROOT_PASSWORD=M1n10Adm1nPw minio/minio server /data", "M1n10Adm1nPw"),
    ("command", "git remote set-url origin https://oauth2:glpat-" + (kk := r(20)) + "@gitlab.com/acme/app.git", "glpat-" + kk),
    ("command", "curl --user deploy:Dep10y#Key https://nexus.internal/repository/", "Dep10y#Key"),
    ("tool_output", "REDIS_PASSWORD=Rds!7qLm2x", "Rds!7qLm2x"),
    ("tool_output", "  password: Kafka-Broker-Pw-88", "Kafka-Broker-Pw-88"),
    ("tool_output", '{"client_id": "web", "client_secret": "' + (kk := r(32)) + '"}', kk),
    ("tool_output", "AMQP_URL=amqps://svc:Amqp9Pass@mq.internal:5671/vhost", "Amqp9Pass"),
    ("tool_output", "admin_password = \"Pr0d-Adm1n-Pw\"", "Pr0d-Adm1n-Pw"),
    ("tool_output", "SESSION_SECRET=" + (kk := r(40)), kk),
    ("tool_output", "The initial root password is: 9fKq!2mLx7Pz", "9fKq!2mLx7Pz"),
    ("tool_output", "privateKey: " + (kk := r(64, B64)), kk),
]:
    sec(kind, text, secret)
for kind, text in [
    ("command", "NODE_OPTIONS='--max-old-space-size=6144 --enable-source-maps' pnpm build"),
    ("command", "GOFLAGS=-mod=mod CGO_ENABLED=0 go build -ldflags='-s -w' ./cmd/server"),
    ("command", "export JAVA_TOOL_OPTIONS=-Dfile.encoding=UTF-8"),
    ("command", "git show 9c1e5b7d8a0f4e6c2b1a9d8e7f6c5b4a39213f2a --stat"),
    ("command", "docker build --build-arg PYTHON_VERSION=3.12.4 -t acme/api:2024.06.12-rc2 ."),
    ("command", "kubectl get secret web-db-credentials -o jsonpath='{.data.password}' | base64 -d"),
    ("command", "aws secretsmanager get-secret-value --secret-id prod/web/db --query SecretString"),
    ("command", "vault kv get -field=password secret/data/staging/db"),
    ("command", "op read op://Infra/staging-db/password"),
    ("command", "npx prisma migrate deploy --schema=./prisma/schema.prisma"),
    ("command", "python -c 'import secrets; print(secrets.token_urlsafe(32))'"),
    ("command", "export PASSWORD_MIN_LENGTH=12"),
    ("tool_output", "sha1: da39a3ee5e6b4b0d3255bfef95601890afd80709"),
    ("tool_output", "npm WARN deprecated inflight@1.0.6: This module is not supported"),
    ("tool_output", "added 1423 packages, audited 1424 packages in 38s"),
    ("tool_output", "remote: Resolving deltas: 100% (2481/2481), done."),
    ("tool_output", "ERROR: Could not find a version that satisfies the requirement torch==2.3.1+cu118"),
    ("tool_output", "session 5f1d2c3b-9a8e-4f7d-b6c5-a4b3c2d1e0f9 started at 2024-06-12 10:31 UTC"),
    ("tool_output", "build id 20240612.7 (sha 7f3c2d1e)"),
    ("tool_output", "job_id=bq-job_4fZk9pQ2mX7vL1nR8tY3 state=DONE"),
    ("tool_output", "Your password has expired and must be changed."),
    ("tool_output", "the password must contain at least one digit (validators.py:31)"),
    ("tool_output", "django.db.utils.OperationalError: password authentication failed for user \"app\""),
    ("tool_output", "Generating RSA private key, 2048 bit long modulus"),
    ("tool_output", "X-Amz-Cf-Id: 2Zr9qkT7wL1mN5bV3cX8zA6sD4fG0hJ2kL7pQ9wE1rT5yU3iO8aS=="),
    ("tool_output", "wheel: mino_core-0.13.0-py3-none-any.whl (sha256=3f2a9c1e5b7d8a0f4e6c2b1a9d8e7f6c)"),
    ("tool_output", "TypeError: Cannot read properties of undefined (reading 'accessToken')"),
    ("message", "the login page needs a 'forgot password' link"),
    ("message", "tokens are signed with RS256 and rotate weekly"),
    ("message", "we moved the api keys to Doppler, the project is acme-web, config prd"),
    ("message", "the release tag is v2.14.0-beta.3"),
    ("message", "our Postgres is 16.3 on db.internal port 5432, database app"),
    ("message", "the admin account is locked after 5 wrong passwords"),
    ("message", "use --max-old-space-size=4096 for tsc too"),
    ("message", "the docker image digest is sha256:0d1e2f3a4b5c6d7e8f9a0b1c9b2f1c3e4d5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c"),
    ("message", "the user table has 2M rows; log in as yourself to see the dashboard"),
    ("message", "the password policy lives in src/auth/policy.py"),
    ("message", "the secret scanning step in CI is called detect-secrets-hook"),
    ("message", "the S3 bucket is acme-prod-assets-eu-west-1"),
    ("message", "the commit that added the token refresh is 4e6c2b1a"),
]:
    ok(kind, text)

out = Path(__file__).with_name("labelled.jsonl")
with out.open("w", encoding="utf-8") as fh:
    for i, (kind, text, secret) in enumerate(S):
        fh.write(json.dumps({"split": "dev" if i < DEV else "holdout", "kind": kind,
                             "secret": secret is not None, "value": secret, "text": text},
                            ensure_ascii=False) + "\n")
pos = sum(1 for s in S if s[2] is not None)
print(f"{len(S)} lines ({DEV} dev, {len(S) - DEV} held out): {pos} with a secret, "
      f"{len(S) - pos} without")
