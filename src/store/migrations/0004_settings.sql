-- Installation-wide values every process must share, such as the key that encrypts signing
-- secrets when COURIER_SECRETS_KEY is not set.
create table courier_settings (
  name text primary key,
  value bytea not null
);
