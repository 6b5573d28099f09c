/** The settings a voter cannot start without, as environment variables: voter1 of a three-voter cluster. */
export const REQUIRED_ENV = {
  KeyLoad__Node__Id: "voter1",
  KeyLoad__Node__DataDir: "/tmp/v1",
  KeyLoad__Cluster__Voters: "voter1@127.0.0.1:7201,voter2@127.0.0.1:7202,voter3@127.0.0.1:7203",
  KeyLoad__Cluster__Secret: "0123456789abcdef-secret",
  KeyLoad__Bootstrap__AdminKey: "admin-key-0123456789",
} as const;
