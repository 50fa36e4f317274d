# The network: one VPC in one availability zone, a public subnet for the control machine
# (reached through its Elastic IP) and a private one for the workers, which go out through
# a NAT gateway and are never reachable from the internet. Flow logs record every
# connection, accepted or rejected.

locals {
  availability_zone = var.availability_zone != "" ? var.availability_zone : "${var.aws_region}a"
  subnet_newbits    = 24 - tonumber(split("/", var.vpc_cidr)[1])
  # Each kind of machine's subnet: the control machine's the VPC's first /24, the
  # workers' the second.
  subnet_cidrs = {
    control = cidrsubnet(var.vpc_cidr, local.subnet_newbits, 0)
    workers = cidrsubnet(var.vpc_cidr, local.subnet_newbits, 1)
  }
  # Fixed, so that the workers' boot configuration can name it without waiting for the
  # control machine (and without a cycle between the two).
  control_private_ip = cidrhost(local.subnet_cidrs.control, 10)
}

resource "aws_vpc" "arena" {
  cidr_block           = var.vpc_cidr
  enable_dns_support   = true
  enable_dns_hostnames = true

  tags = { Name = var.name }
}

# The VPC's default security group is left with no rule, so nothing that lands in it by
# mistake can talk to anything.
resource "aws_default_security_group" "closed" {
  vpc_id = aws_vpc.arena.id

  tags = { Name = "${var.name}-default-closed" }
}

resource "aws_internet_gateway" "arena" {
  vpc_id = aws_vpc.arena.id

  tags = { Name = var.name }
}

resource "aws_subnet" "arena" {
  for_each                = local.subnet_cidrs
  vpc_id                  = aws_vpc.arena.id
  cidr_block              = each.value
  availability_zone       = local.availability_zone
  map_public_ip_on_launch = false

  tags = { Name = "${var.name}-${each.key}" }
}

# The subnets were two resources before: existing deployments keep theirs.
moved {
  from = aws_subnet.control
  to   = aws_subnet.arena["control"]
}

moved {
  from = aws_subnet.workers
  to   = aws_subnet.arena["workers"]
}

resource "aws_route_table" "control" {
  vpc_id = aws_vpc.arena.id

  route {
    cidr_block = "0.0.0.0/0"
    gateway_id = aws_internet_gateway.arena.id
  }

  tags = { Name = "${var.name}-control" }
}

resource "aws_route_table_association" "control" {
  subnet_id      = aws_subnet.arena["control"].id
  route_table_id = aws_route_table.control.id
}

# Workers download Debian packages, the repository and agents' wheels; the NAT gateway is
# there only while there are workers (it is the largest fixed cost after the machines).
resource "aws_eip" "nat" {
  count  = var.worker_count > 0 ? 1 : 0
  domain = "vpc"

  tags = { Name = "${var.name}-nat" }
}

resource "aws_nat_gateway" "workers" {
  count         = var.worker_count > 0 ? 1 : 0
  allocation_id = aws_eip.nat[0].id
  subnet_id     = aws_subnet.arena["control"].id

  tags = { Name = "${var.name}-workers" }

  depends_on = [aws_internet_gateway.arena]
}

resource "aws_route_table" "workers" {
  vpc_id = aws_vpc.arena.id

  tags = { Name = "${var.name}-workers" }
}

resource "aws_route" "workers_outbound" {
  count                  = var.worker_count > 0 ? 1 : 0
  route_table_id         = aws_route_table.workers.id
  destination_cidr_block = "0.0.0.0/0"
  nat_gateway_id         = aws_nat_gateway.workers[0].id
}

resource "aws_route_table_association" "workers" {
  subnet_id      = aws_subnet.arena["workers"].id
  route_table_id = aws_route_table.workers.id
}

resource "aws_flow_log" "arena" {
  vpc_id               = aws_vpc.arena.id
  traffic_type         = "ALL"
  log_destination_type = "cloud-watch-logs"
  log_destination      = aws_cloudwatch_log_group.flow_logs.arn
  iam_role_arn         = aws_iam_role.flow_logs.arn

  tags = { Name = var.name }
}

resource "aws_cloudwatch_log_group" "flow_logs" {
  name              = "/${var.name}/vpc-flow-logs"
  retention_in_days = var.log_retention_days
  kms_key_id        = aws_kms_key.arena.arn
}

data "aws_iam_policy_document" "flow_logs_assume" {
  statement {
    actions = ["sts:AssumeRole"]

    principals {
      type        = "Service"
      identifiers = ["vpc-flow-logs.amazonaws.com"]
    }

    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [data.aws_caller_identity.current.account_id]
    }
  }
}

data "aws_iam_policy_document" "flow_logs_write" {
  statement {
    actions = ["logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"]
    resources = [
      aws_cloudwatch_log_group.flow_logs.arn,
      "${aws_cloudwatch_log_group.flow_logs.arn}:*",
    ]
  }

  statement {
    actions   = ["logs:DescribeLogGroups"]
    resources = ["arn:${data.aws_partition.current.partition}:logs:${var.aws_region}:${data.aws_caller_identity.current.account_id}:log-group:*"]
  }
}

resource "aws_iam_role" "flow_logs" {
  name               = "${var.name}-flow-logs"
  assume_role_policy = data.aws_iam_policy_document.flow_logs_assume.json
}

resource "aws_iam_role_policy" "flow_logs" {
  name   = "write-flow-logs"
  role   = aws_iam_role.flow_logs.id
  policy = data.aws_iam_policy_document.flow_logs_write.json
}
