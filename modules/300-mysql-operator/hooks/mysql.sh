#!/usr/bin/env bash
# The whole controller of the MySQL objects (otus.homework/v1), in bash + jq.
#
# Watches MySQL objects, the Jobs and the root-password Secrets labelled
# with an instance, and on every change recomputes from the three snapshots:
# - values: mysqlOperator.internal.instances (the chart renders each one);
# - operations (KUBERNETES_PATCH_PATH): the finalizer, the backup volume and
#   Job on delete, the password Job on a password change, and the status.
# Everything is derived from the cluster's state, so a repeated or missed
# run converges to the same result (Jobs are named deterministically and
# created with CreateIfNotExists).
set -euo pipefail

if [[ "${1:-}" == "--config" ]]; then
  cat <<'YAML'
configVersion: v1
kubernetes:
- name: mysqls
  apiVersion: otus.homework/v1
  kind: MySQL
  jqFilter: '{name: .metadata.name, namespace: .metadata.namespace, uid: .metadata.uid, spec: .spec, deleting: (.metadata.deletionTimestamp != null), finalizers: (.metadata.finalizers // []), status: (.status // {})}'
  includeSnapshotsFrom: [mysqls, jobs, secrets]
- name: jobs
  apiVersion: batch/v1
  kind: Job
  labelSelector:
    matchExpressions:
    - {key: mysql.otus.homework/instance, operator: Exists}
  jqFilter: '{name: .metadata.name, namespace: .metadata.namespace, instance: .metadata.labels["mysql.otus.homework/instance"], purpose: .metadata.labels["mysql.otus.homework/purpose"], owner: .metadata.labels["mysql.otus.homework/uid"], checksum: .metadata.labels["mysql.otus.homework/password-checksum"], complete: ([.status.conditions[]? | select(.type == "Complete" and .status == "True")] | length > 0)}'
  includeSnapshotsFrom: [mysqls, jobs, secrets]
- name: secrets
  apiVersion: v1
  kind: Secret
  labelSelector:
    matchLabels:
      mysql.otus.homework/secret: root
  jqFilter: '{namespace: .metadata.namespace, instance: .metadata.labels["mysql.otus.homework/instance"], password: (.data.password // "" | @base64d)}'
  includeSnapshotsFrom: [mysqls, jobs, secrets]
YAML
  exit 0
fi

snapshots=$(jq -c '.[-1].snapshots' "$BINDING_CONTEXT_PATH")

# jq has no hash: the password checksums (first 16 hex digits of sha256,
# short enough for a label) come from sha256sum, one "key sum" line per
# object (key: base64 of namespace/name), read back by the jq below.
sums=$(jq -r '.mysqls[]?.filterResult | [(.namespace + "/" + .name), (.spec.password // "")] | map(@base64) | join(" ")' <<<"$snapshots" |
  while read -r key pw; do
    printf '%s %s\n' "$key" "$(printf '%s' "$pw" | base64 -d | sha256sum | cut -c1-16)"
  done)

result=$(jq -c --arg sums "$sums" -f /dev/stdin <(printf '%s' "$snapshots") <<'JQ'
def finalizer: "mysql.otus.homework/backup";
def labels($m; $purpose):
  {"app.kubernetes.io/name": "mysql", "app.kubernetes.io/managed-by": "antiopa",
   "mysql.otus.homework/instance": $m.name, "mysql.otus.homework/purpose": $purpose,
   "mysql.otus.homework/uid": $m.uid8};
def owner($m):
  [{apiVersion: "otus.homework/v1", kind: "MySQL", name: $m.name, uid: $m.uid}];
def mysql_ref($m):
  {apiVersion: "otus.homework/v1", kind: "MySQL", namespace: $m.namespace, name: $m.name};
def status_patch($m; $status):
  mysql_ref($m) + {operation: "MergePatch", subresource: "status", ignoreMissingObject: true,
                   mergePatch: {status: $status}};
def finalizers_patch($m; $list):
  mysql_ref($m) + {operation: "MergePatch", ignoreMissingObject: true,
                   mergePatch: {metadata: {finalizers: $list}}};
def pw_env($name; $secret; $key):
  {name: $name, valueFrom: {secretKeyRef: {name: $secret, key: $key}}};
# The server may be (re)starting: scripts wait for it (mysqladmin ping
# succeeds once it answers, even refusing the login); 15 minutes at most.
def job($m; $name; $purpose; $extra_labels; $script; $env; $volume; $owned):
  {operation: "CreateIfNotExists", object: {
    apiVersion: "batch/v1", kind: "Job",
    metadata: ({name: $name, namespace: $m.namespace,
                labels: (labels($m; $purpose) + $extra_labels)}
               + (if $owned then {ownerReferences: owner($m)} else {} end)),
    spec: {backoffLimit: 6, activeDeadlineSeconds: 900, template: {
      metadata: {labels: labels($m; $purpose)},
      spec: {restartPolicy: "OnFailure",
        containers: [{name: $purpose, image: $m.spec.image,
                      command: ["/bin/sh", "-c", $script], env: $env}
                     + (if $volume then {volumeMounts: [{name: "backup", mountPath: "/backup"}]} else {} end)],
        volumes: (if $volume then [{name: "backup", persistentVolumeClaim: {claimName: ("backup-" + $m.name)}}] else [] end)}}}}};

($sums | split("\n") | map(select(. != "") | split(" ") | {key: (.[0] | @base64d), value: .[1]})
 | from_entries) as $sums
| (.jobs // [] | map(.filterResult)) as $jobs
| (.secrets // [] | map(.filterResult)) as $secrets
| [ .mysqls // [] | .[].filterResult
    | . + {uid8: .uid[0:8], key: (.namespace + "/" + .name)}
    | . as $m
    | ($sums[$m.key]) as $ck
    | [$jobs[] | select(.namespace == $m.namespace and .instance == $m.name)] as $mine
    # A finished backup of an earlier object of this name: restore it.
    | ([$mine[] | select(.purpose == "backup" and .complete and .owner != $m.uid8)] | length > 0) as $restore
    | ([$secrets[] | select(.namespace == $m.namespace and .instance == $m.name) | .password] | first // null) as $deployed_pw
    | ($m.finalizers | any(.[]; . == finalizer)) as $held
    | {
        instance: (if $m.deleting and ($held | not) then null else
          {name: $m.name, namespace: $m.namespace, uid8: $m.uid8, image: $m.spec.image,
           database: $m.spec.database, password: $m.spec.password,
           storageSize: $m.spec.storage_size, passwordChecksum: $ck, restore: $restore} end),
        ops: (
          if $m.deleting then
            if $held then
              ([$mine[] | select(.purpose == "backup" and .owner == $m.uid8)] | first // null) as $backup
              | [ {operation: "CreateIfNotExists", object: {
                    apiVersion: "v1", kind: "PersistentVolumeClaim",
                    metadata: {name: ("backup-" + $m.name), namespace: $m.namespace,
                               labels: labels($m; "backup")},
                    spec: {accessModes: ["ReadWriteOnce"],
                           resources: {requests: {storage: $m.spec.storage_size}}}}},
                  job($m; ($m.name + "-backup-" + $m.uid8); "backup"; {};
                      "mysqldump -u root -h \($m.name) -p\"$MYSQL_ROOT_PASSWORD\" \"$MYSQL_DATABASE\" > /backup/\($m.name)-dump.sql";
                      [pw_env("MYSQL_ROOT_PASSWORD"; ($m.name + "-mysql"); "password"),
                       {name: "MYSQL_DATABASE", value: $m.spec.database}]; true; false) ]
                + (if $backup != null and $backup.complete then
                     [ status_patch($m; {message: "backup done"}),
                       finalizers_patch($m; ($m.finalizers - [finalizer])) ]
                   else [] end)
            else [] end
          else
            (if $held then [] else [finalizers_patch($m; ($m.finalizers + [finalizer]))] end)
            + if ($m.status.message // "") == "" then
                [status_patch($m; {message: (if $restore then "created with restore from backup" else "created without restore" end),
                                   passwordChecksum: $ck})]
              elif $m.status.passwordChecksum != $ck then
                ($m.name + "-password-" + $ck) as $jname
                | ([$mine[] | select(.purpose == "password" and .checksum == $ck and .owner == $m.uid8)] | first // null) as $pjob
                | (if $pjob == null and $deployed_pw != null and $deployed_pw != $m.spec.password then
                     # old -> new: the Job logs in with the deployed password and sets the new one.
                     [ {operation: "CreateIfNotExists", object: {
                          apiVersion: "v1", kind: "Secret", type: "Opaque",
                          metadata: {name: $jname, namespace: $m.namespace, labels: labels($m; "password"),
                                     ownerReferences: owner($m)},
                          stringData: {old: $deployed_pw, new: $m.spec.password}}},
                       job($m; $jname; "password"; {"mysql.otus.homework/password-checksum": $ck};
                           "until mysqladmin ping -h \($m.name) --silent; do sleep 2; done; mysql -u root -h \($m.name) -p\"$OLD_PASSWORD\" -e \"ALTER USER 'root'@'%' IDENTIFIED BY '$NEW_PASSWORD'; ALTER USER 'root'@'localhost' IDENTIFIED BY '$NEW_PASSWORD'; FLUSH PRIVILEGES;\"";
                           [pw_env("OLD_PASSWORD"; $jname; "old"), pw_env("NEW_PASSWORD"; $jname; "new")]; false; true) ]
                   else [] end)
                + (if $pjob != null and $pjob.complete then
                     [status_patch($m; {message: "password updated", passwordChecksum: $ck})]
                   else [] end)
              else [] end
          end)
      }
  ]
| {instances: [.[].instance | select(. != null)] | sort_by(.namespace, .name),
   ops: [.[].ops[]]}
JQ
)

jq -c '[{op: "add", path: "/mysqlOperator/internal/instances", value: .instances}]' <<<"$result" > "$VALUES_JSON_PATCH_PATH"
jq -c '.ops[]' <<<"$result" > "$KUBERNETES_PATCH_PATH"
jq -r '"mysql: \(.instances | length) instances, \(.ops | length) operations"' <<<"$result" >&2
