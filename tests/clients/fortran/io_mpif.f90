! MPI-IO from Fortran through include 'mpif.h' (the Fortran 77 interface).
!   io_mpif pario|native FILE
! Each rank writes N integers at byte offset rank*N*4 with MPI_File_write_at_all, reads back
! its neighbour's block with MPI_File_read_at_all and checks every value and the file size.
! pario check: MPI_File_get_info reports the key pario_sharedfp under pario and not natively.
program io_mpif
  implicit none
  include 'mpif.h'
  integer, parameter :: n = 1000
  integer :: ierr, rank, np, fh, info, i, nbad, nfail, total, other
  integer :: status(MPI_STATUS_SIZE)
  integer :: wbuf(n), rbuf(n)
  integer(kind=MPI_OFFSET_KIND) :: off, fsize
  character(len=16) :: mode
  character(len=4096) :: path
  character(len=MPI_MAX_INFO_VAL) :: val
  logical :: flag

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, np, ierr)
  call get_command_argument(1, mode)
  call get_command_argument(2, path)
  nfail = 0

  do i = 1, n
    wbuf(i) = rank * n + i - 1
  end do
  call MPI_FILE_OPEN(MPI_COMM_WORLD, trim(path), MPI_MODE_CREATE + MPI_MODE_RDWR, &
                     MPI_INFO_NULL, fh, ierr)
  if (ierr /= MPI_SUCCESS) call fail('MPI_File_open')
  off = int(rank, MPI_OFFSET_KIND) * n * 4
  call MPI_FILE_WRITE_AT_ALL(fh, off, wbuf, n, MPI_INTEGER, status, ierr)
  if (ierr /= MPI_SUCCESS) call fail('MPI_File_write_at_all')
  call MPI_FILE_SYNC(fh, ierr)
  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  call MPI_FILE_SYNC(fh, ierr)

  other = mod(rank + 1, np)
  off = int(other, MPI_OFFSET_KIND) * n * 4
  rbuf = -1
  call MPI_FILE_READ_AT_ALL(fh, off, rbuf, n, MPI_INTEGER, status, ierr)
  if (ierr /= MPI_SUCCESS) call fail('MPI_File_read_at_all')
  nbad = 0
  do i = 1, n
    if (rbuf(i) /= other * n + i - 1) nbad = nbad + 1
  end do
  if (nbad /= 0) call fail('wrong data read back')
  call MPI_FILE_GET_SIZE(fh, fsize, ierr)
  if (fsize /= int(np, MPI_OFFSET_KIND) * n * 4) call fail('wrong file size')

  call MPI_FILE_GET_INFO(fh, info, ierr)
  call MPI_INFO_GET(info, 'pario_sharedfp', MPI_MAX_INFO_VAL, val, flag, ierr)
  call MPI_INFO_FREE(info, ierr)
  if (flag .neqv. (trim(mode) == 'pario')) call fail('pario_sharedfp in MPI_File_get_info')
  call MPI_FILE_CLOSE(fh, ierr)
  if (ierr /= MPI_SUCCESS) call fail('MPI_File_close')

  call MPI_ALLREDUCE(nfail, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (total == 0) then
      print '(a,a,a,i0,a,l1,a)', 'io_mpif: ', trim(mode), ', ', np, ' ranks, pario_sharedfp reported: ', flag, ': ok'
    else
      print '(a,i0,a)', 'io_mpif: ', total, ' failures'
    end if
  end if
  call MPI_FINALIZE(ierr)
  if (total /= 0) stop 1

contains
  subroutine fail(what)
    character(len=*), intent(in) :: what
    print '(a,i0,a,a)', 'io_mpif rank ', rank, ': ', what
    nfail = nfail + 1
  end subroutine fail
end program io_mpif
