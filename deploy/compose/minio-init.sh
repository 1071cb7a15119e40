#!/bin/sh
# One-shot MinIO set-up for docker-compose.yml (the `minio-init` service, image minio/mc).
# Idempotent: safe to run on every `docker compose up`.
#   1. the bucket S3_BUCKET;
#   2. a policy limited to that bucket;
#   3. the application's own user S3_ACCESS_KEY / S3_SECRET_KEY with that policy. The services
#      never see the MinIO root credentials. Re-running with a new S3_SECRET_KEY rotates it.
set -eu

: "${MINIO_ROOT_USER:?}" "${MINIO_ROOT_PASSWORD:?}" "${S3_ACCESS_KEY:?}" "${S3_SECRET_KEY:?}" "${S3_BUCKET:?}"
MINIO_URL="${MINIO_URL:-http://minio:9000}"
export MC_CONFIG_DIR="${MC_CONFIG_DIR:-/tmp/.mc}"

attempt=0
until mc alias set kb "$MINIO_URL" "$MINIO_ROOT_USER" "$MINIO_ROOT_PASSWORD" >/dev/null 2>&1; do
  attempt=$((attempt + 1))
  if [ "$attempt" -ge 30 ]; then
    echo "minio-init: MinIO at $MINIO_URL did not accept the root credentials after 30 attempts" >&2
    exit 1
  fi
  sleep 2
done

mc mb --ignore-existing "kb/$S3_BUCKET"

policy_file="$(mktemp)"
cat >"$policy_file" <<EOF
{
  "Version": "2012-10-17",
  "Statement": [
    {
      "Effect": "Allow",
      "Action": ["s3:GetBucketLocation", "s3:ListBucket", "s3:ListBucketMultipartUploads"],
      "Resource": ["arn:aws:s3:::$S3_BUCKET"]
    },
    {
      "Effect": "Allow",
      "Action": ["s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"],
      "Resource": ["arn:aws:s3:::$S3_BUCKET/*"]
    }
  ]
}
EOF
policy="kb-app-$S3_BUCKET"
mc admin policy create kb "$policy" "$policy_file"
rm -f "$policy_file"

# `user add` on an existing user sets its secret key again (this is how the key is rotated).
mc admin user add kb "$S3_ACCESS_KEY" "$S3_SECRET_KEY"
if ! mc admin user info kb "$S3_ACCESS_KEY" | grep -q "$policy"; then
  mc admin policy attach kb "$policy" --user "$S3_ACCESS_KEY"
fi
echo "minio-init: bucket $S3_BUCKET and user $S3_ACCESS_KEY (policy $policy) ready"
