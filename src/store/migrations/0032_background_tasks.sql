-- Svix answers recover, replay-missing and bulk replay with a background task that a caller can
-- read again (GET /background-task/{id}, the svix SDK's backgroundTask.get and list). Courier
-- finishes the work before it answers; the task is kept so that reading it back works as in Svix.
-- Ids are qtask_ + a ULID of the task's time: retention deletes them by id range, as it does
-- operational events.
create table courier_background_tasks (
  id text collate "C" primary key,
  task text not null,
  status text not null,
  data jsonb not null,
  updated_at timestamptz not null
);

-- The list's filters (status, task) are not indexed: a handful of tasks a day, kept for the
-- retention period.
