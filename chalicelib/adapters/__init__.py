"""The only code that imports boto3 or PynamoDB: tables, queues, bucket, agent runtimes."""
