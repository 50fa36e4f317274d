# The firewall. From the internet only 80 and 443 reach the control machine (nginx), plus
# SSH from one address range when ssh_cidr is set. PostgreSQL and Redis, published on the
# control machine's private address, accept the workers' security group and nothing else.
# Outwards every machine may open the TCP ports of egress_ports (80 and 443 by default);
# the VPC's DNS resolver and time service are reachable without a rule.
#
# Rules are separate resources: the two groups name each other, which rules inside the
# groups cannot do without a cycle.

locals {
  ssh_enabled = var.ssh_cidr != ""
  egress_ports = {
    for port in var.egress_ports : tostring(port) => port
  }
}

resource "aws_security_group" "control" {
  name        = "${var.name}-control"
  description = "Arena control machine: the web site to the world, PostgreSQL and Redis to the workers"
  vpc_id      = aws_vpc.arena.id

  tags = { Name = "${var.name}-control" }
}

resource "aws_security_group" "workers" {
  name        = "${var.name}-workers"
  description = "Arena worker machines: nothing comes in but SSH from the control machine when enabled"
  vpc_id      = aws_vpc.arena.id

  tags = { Name = "${var.name}-workers" }
}

resource "aws_vpc_security_group_ingress_rule" "control_http" {
  #checkov:skip=CKV_AWS_260:Port 80 is public on purpose: nginx answers plain HTTP with a redirect to HTTPS and serves ACME certificate challenges.
  security_group_id = aws_security_group.control.id
  description       = "HTTP to nginx from anywhere (redirect to HTTPS, certificate challenges)"
  ip_protocol       = "tcp"
  from_port         = 80
  to_port           = 80
  cidr_ipv4         = "0.0.0.0/0"
}

resource "aws_vpc_security_group_ingress_rule" "control_https" {
  security_group_id = aws_security_group.control.id
  description       = "HTTPS to nginx from anywhere"
  ip_protocol       = "tcp"
  from_port         = 443
  to_port           = 443
  cidr_ipv4         = "0.0.0.0/0"
}

resource "aws_vpc_security_group_ingress_rule" "control_postgres" {
  security_group_id            = aws_security_group.control.id
  description                  = "PostgreSQL from the worker machines only"
  ip_protocol                  = "tcp"
  from_port                    = 5432
  to_port                      = 5432
  referenced_security_group_id = aws_security_group.workers.id
}

resource "aws_vpc_security_group_ingress_rule" "control_redis" {
  security_group_id            = aws_security_group.control.id
  description                  = "Redis (broker and seat bus) from the worker machines only"
  ip_protocol                  = "tcp"
  from_port                    = 6379
  to_port                      = 6379
  referenced_security_group_id = aws_security_group.workers.id
}

resource "aws_vpc_security_group_ingress_rule" "control_ssh" {
  count             = local.ssh_enabled ? 1 : 0
  security_group_id = aws_security_group.control.id
  description       = "SSH from the operators' address range (ssh_cidr)"
  ip_protocol       = "tcp"
  from_port         = 22
  to_port           = 22
  cidr_ipv4         = var.ssh_cidr
}

resource "aws_vpc_security_group_ingress_rule" "workers_ssh" {
  count             = local.ssh_enabled ? 1 : 0
  security_group_id = aws_security_group.workers.id
  description       = "SSH from the control machine, the operators' jump host"
  ip_protocol       = "tcp"
  from_port         = 22
  to_port           = 22
  cidr_ipv4         = "${local.control_private_ip}/32"
}

resource "aws_vpc_security_group_egress_rule" "control_out" {
  for_each          = local.egress_ports
  security_group_id = aws_security_group.control.id
  description       = "TCP ${each.value} outwards (egress_ports)"
  ip_protocol       = "tcp"
  from_port         = each.value
  to_port           = each.value
  cidr_ipv4         = "0.0.0.0/0"
}

resource "aws_vpc_security_group_egress_rule" "control_ssh_to_workers" {
  count                        = local.ssh_enabled ? 1 : 0
  security_group_id            = aws_security_group.control.id
  description                  = "SSH onwards to the worker machines"
  ip_protocol                  = "tcp"
  from_port                    = 22
  to_port                      = 22
  referenced_security_group_id = aws_security_group.workers.id
}

resource "aws_vpc_security_group_egress_rule" "workers_out" {
  for_each          = local.egress_ports
  security_group_id = aws_security_group.workers.id
  description       = "TCP ${each.value} outwards through the NAT gateway (egress_ports)"
  ip_protocol       = "tcp"
  from_port         = each.value
  to_port           = each.value
  cidr_ipv4         = "0.0.0.0/0"
}

resource "aws_vpc_security_group_egress_rule" "workers_postgres" {
  security_group_id            = aws_security_group.workers.id
  description                  = "PostgreSQL on the control machine"
  ip_protocol                  = "tcp"
  from_port                    = 5432
  to_port                      = 5432
  referenced_security_group_id = aws_security_group.control.id
}

resource "aws_vpc_security_group_egress_rule" "workers_redis" {
  security_group_id            = aws_security_group.workers.id
  description                  = "Redis on the control machine"
  ip_protocol                  = "tcp"
  from_port                    = 6379
  to_port                      = 6379
  referenced_security_group_id = aws_security_group.control.id
}
